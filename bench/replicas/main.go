// Command replicas measures what replicas sharing PostgreSQL cost: the
// same bounded load (a number of calls, not a time) from many Go SDK
// clients at once, over Streamable HTTP at the stateless revision, sent
// straight to the Go SDK test server, then through one `bailiff gateway
// --listen` in front of it, then through two replicas sharing one tenant
// budget in PostgreSQL. It prints the latency of one call at p50 and p99
// and the throughput of each, and what bailiff adds against the direct
// calls measured in the same run. Timings are for reading, never for
// pass/fail. bench/replicas.sh builds what it runs and starts the database.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	bailiff := flag.String("bailiff", "bench/out/bailiff", "the bailiff binary")
	server := flag.String("server", "bench/out/sdkserver", "the Go SDK test server binary")
	pg := flag.String("postgres", os.Getenv("BAILIFF_TEST_POSTGRES"), "a PostgreSQL URL whose database bailiff may use")
	calls := flag.Int("calls", 4000, "calls per configuration")
	clients := flag.Int("clients", 64, "clients at once")
	flag.Parse()
	if *pg == "" {
		log.Fatal("no PostgreSQL: -postgres URL or $BAILIFF_TEST_POSTGRES (bench/replicas.sh starts one)")
	}
	dir, err := os.MkdirTemp("", "bailiff-replicas-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			p.Process.Signal(os.Interrupt)
			p.Wait()
		}
	}()
	start := func(name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "USER=bench")
		url, err := serve(cmd, args[0] == "gateway")
		if err != nil {
			log.Fatal(err)
		}
		procs = append(procs, cmd)
		return url
	}
	upstream := start(*server, "-listen", "127.0.0.1:0")
	// A ceiling no run reaches: every call takes the shared counters. The
	// same without it shows what taking them costs.
	limited := filepath.Join(dir, "limited.yaml")
	must(os.WriteFile(limited, []byte("version: 1\nrules:\n  - {id: echo, server: up, tool: echo, action: allow}\ntenants:\n  acme: {ceiling: 1000000000, window: 87840h}\n"), 0o644))
	plain := filepath.Join(dir, "plain.yaml")
	must(os.WriteFile(plain, []byte("version: 1\nrules:\n  - {id: echo, server: up, tool: echo, action: allow}\n"), 0o644))
	n := 0
	gateway := func(policy string) string {
		n++
		config := filepath.Join(dir, fmt.Sprintf("gw-%d.yaml", n))
		must(os.WriteFile(config, fmt.Appendf(nil, "policy: %s\naudit: %s\nstate: %s\nreplica: r%d\nprincipal: {subject: bench, tenant: acme}\nservers:\n  up:\n    url: %s\n",
			policy, filepath.Join(dir, fmt.Sprintf("r%d.jsonl", n)), *pg, n, upstream), 0o644))
		return start(*bailiff, "gateway", "--config", config, "--listen", "127.0.0.1:0")
	}
	one, two := gateway(limited), gateway(limited)
	plainOne, plainTwo := gateway(plain), gateway(plain)

	direct := load([]string{upstream}, "echo", *calls, *clients)
	r1 := load([]string{one}, "up.echo", *calls, *clients)
	r2 := load([]string{one, two}, "up.echo", *calls, *clients)
	p1 := load([]string{plainOne}, "up.echo", *calls, *clients)
	p2 := load([]string{plainOne, plainTwo}, "up.echo", *calls, *clients)

	fmt.Printf("%d calls per configuration, %d clients at once, stateless Streamable HTTP, durability sync, state in PostgreSQL\n\n", *calls, *clients)
	fmt.Printf("%-36s %9s %9s %13s %13s %10s\n", "path", "p50 ms", "p99 ms", "added p50 ms", "added p99 ms", "calls/s")
	fmt.Printf("%-36s %9.2f %9.2f %13s %13s %10.0f\n", "direct to the server (baseline)", ms(direct.p50), ms(direct.p99), "-", "-", direct.rate)
	for _, r := range []struct {
		name string
		res  result
	}{{"one replica, tenant ceiling", r1}, {"two replicas, tenant ceiling", r2}, {"one replica, no tenant limits", p1}, {"two replicas, no tenant limits", p2}} {
		fmt.Printf("%-36s %9.2f %9.2f %13.2f %13.2f %10.0f\n", r.name, ms(r.res.p50), ms(r.res.p99), ms(r.res.p50-direct.p50), ms(r.res.p99-direct.p99), r.res.rate)
	}
	fmt.Printf("\nthroughput, two replicas against one: %.2fx under a tenant ceiling (every counting step runs alone across replicas), %.2fx without\n", r2.rate/r1.rate, p2.rate/p1.rate)
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// serve starts cmd and returns the URL it says it serves: on stderr
// for bailiff, on stdout for the test server.
func serve(cmd *exec.Cmd, onStderr bool) (string, error) {
	pipe := cmd.StdoutPipe
	if onStderr {
		pipe = cmd.StderrPipe
	}
	out, err := pipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		line := lines.Text()
		if _, url, ok := strings.Cut(line, "serving Streamable HTTP at "); ok {
			go drain(lines)
			return url, nil
		}
		if strings.HasPrefix(line, "http://") {
			go drain(lines)
			return line, nil
		}
	}
	return "", fmt.Errorf("%s said no URL", cmd.Path)
}

func drain(s *bufio.Scanner) {
	for s.Scan() {
	}
}

type result struct {
	p50, p99 time.Duration
	rate     float64
}

// load makes calls calls of tool from clients clients at once, spread
// over urls, and measures each call and the whole.
func load(urls []string, tool string, calls, clients int) result {
	ctx := context.Background()
	sessions := make([]*mcp.ClientSession, clients)
	for c := range sessions {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: urls[c%len(urls)], MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		must(err)
		defer cs.Close()
		sessions[c] = cs
		call(cs, tool) // warm up: the gateway's session and its upstream connection
	}
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	t0 := time.Now()
	for c, cs := range sessions {
		n := calls / clients
		if c < calls%clients {
			n++
		}
		wg.Go(func() {
			for range n {
				t := time.Now()
				call(cs, tool)
				lat[c] = append(lat[c], time.Since(t))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	all := slices.Concat(lat...)
	slices.Sort(all)
	return result{p50: all[len(all)/2], p99: all[len(all)*99/100], rate: float64(len(all)) / elapsed.Seconds()}
}

func call(cs *mcp.ClientSession, tool string) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hello"}})
	if err != nil || res.IsError {
		log.Fatalf("%s: %v %+v", tool, err, res)
	}
}
