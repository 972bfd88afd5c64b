package state

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// answersVersionPG moves on every answer any process gives (they notify
// answersChannel): a gateway then looks for it. While the listener is
// not connected, it moves at every read, and the gateway looks every
// time: polling, until the listener is back.
func (s *Store) answersVersionPG() string {
	p := s.pg
	p.listenOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		p.stop, p.done = cancel, make(chan struct{})
		go p.listen(ctx)
	})
	if !p.listening.Load() {
		return fmt.Sprintf("poll %d", p.polls.Add(1))
	}
	return fmt.Sprintf("%d/%d", p.heard.Load(), s.answered.Load())
}

func (p *pgStore) listen(ctx context.Context) {
	defer close(p.done)
	for ctx.Err() == nil {
		conn, err := pgx.Connect(ctx, p.dsn)
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+answersChannel); err == nil {
				// Whatever was given while no one listened is looked
				// for once: the version moves.
				p.heard.Add(1)
				p.listening.Store(true)
				for {
					if _, err = conn.WaitForNotification(ctx); err != nil {
						break
					}
					p.heard.Add(1)
				}
			}
			p.listening.Store(false)
			conn.Close(context.Background())
		}
		select {
		case <-ctx.Done():
		case <-time.After(pgListenRetry):
		}
	}
}

func (p *pgStore) close() {
	// Once closing, no listener starts, and one starting meanwhile has
	// set stop before this reads it.
	p.listenOnce.Do(func() {})
	if p.stop != nil {
		p.stop()
		<-p.done
	}
}
