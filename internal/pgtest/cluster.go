package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// Cluster is a PostgreSQL server of a test's own, which the test may stop
// and start again (the shared one of Server may not be stopped: other
// packages' tests use it). It is made with the binaries of the
// machine's postgresql package, run as the postgres user when the test
// runs as root (initdb and postgres refuse root), and removed when the
// test ends.
type Cluster struct {
	t        testing.TB
	bin, dir string
	Port     int
	// DSN is the URL of its postgres database.
	DSN string
}

// NewCluster starts a new cluster, skipping t where Server would.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	Server(t)
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		t.Fatal("no initdb under /usr/lib/postgresql: install Debian's postgresql package")
	}
	dir, err := os.MkdirTemp("", "bailiff-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: filepath.Dir(bins[len(bins)-1]), dir: dir}
	t.Cleanup(func() {
		c.pg("pg_ctl", "-D", c.data(), "-m", "immediate", "stop")
		os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, the cluster needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	if out, err := c.pg("initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	c.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.Port)
	c.Start()
	return c
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) pg(tool string, args ...string) ([]byte, error) {
	name := filepath.Join(c.bin, tool)
	if os.Geteuid() == 0 {
		args = append([]string{"-u", "postgres", "--", name}, args...)
		name = "runuser"
	}
	return exec.Command(name, args...).CombinedOutput()
}

// Start starts the server, and waits until it takes connections.
func (c *Cluster) Start() {
	c.t.Helper()
	out, err := c.pg("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-h 127.0.0.1 -p %d -k %s -c fsync=off", c.Port, c.dir), "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		c.t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

// Stop stops the server at once, as a crash or a lost host would:
// every connection is cut.
func (c *Cluster) Stop() {
	c.t.Helper()
	if out, err := c.pg("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop"); err != nil {
		c.t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
}
