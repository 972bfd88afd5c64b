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
	upIn, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	upOut, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = opt.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start upstream: %w", err)
	}
	p := New(opt, in, out, upOut, upIn)
	p.resolveLinks = true
	p.serverDir = cmd.Dir
	err = p.Serve(ctx)
	upIn.Close()
	stop(cmd)
	return err
}

// RunURL is Run for a server at a Streamable HTTP endpoint: bailiff is
// its client, and pumps between it and the client on in/out.
func RunURL(ctx context.Context, opt Options, in io.Reader, out io.Writer, url string) error {
	s, err := dialHTTP(url, nil)
	if err != nil {
		return err
	}
	defer s.close()
	p := newProxy(opt, in, out)
	p.addUpstreamOn(opt.Server, s)
	// resolveLinks stays unset: the server may run anywhere, and a
	// symlink on this machine says nothing of its paths.
	return p.Serve(ctx)
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
