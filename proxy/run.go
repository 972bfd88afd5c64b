package proxy

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// Run starts the upstream command and pumps messages between it and the
// client on in/out until either side closes. The session record is written
// once the server's tools are pinned, and an end record when Run returns.
func Run(ctx context.Context, opt Options, in io.Reader, out io.Writer, cmd *exec.Cmd) error {
	return serveOne(ctx, newProxy(opt, in, out), Upstream{Name: opt.Server, Cmd: cmd})
}

// RunURL is Run for a server at a Streamable HTTP endpoint: bailiff is
// its client, and pumps between it and the client on in/out.
func RunURL(ctx context.Context, opt Options, in io.Reader, out io.Writer, url string) error {
	return serveOne(ctx, newProxy(opt, in, out), Upstream{Name: opt.Server, URL: url})
}

// serveOne puts up behind p, under the session's own server name, and
// serves until either side closes.
func serveOne(ctx context.Context, p *Proxy, up Upstream) error {
	if up.URL != "" {
		s, err := dialHTTP(up.URL, nil)
		if err != nil {
			return err
		}
		defer s.close()
		p.addUpstreamOn(p.opt.Server, s)
		// resolveLinks stays unset: the server may run anywhere, and a
		// symlink on this machine says nothing of its paths.
		return p.Serve(ctx)
	}
	cmd := up.Cmd
	upIn, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	upOut, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = p.opt.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start upstream: %w", err)
	}
	p.addUpstream(p.opt.Server, upOut, upIn)
	p.resolveLinks = true
	p.serverDir = cmd.Dir
	err = p.Serve(ctx)
	upIn.Close()
	stop(cmd)
	return err
}

// stop waits for a server whose stdin is closed to exit, and makes it.
func stop(cmd *exec.Cmd) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
}
