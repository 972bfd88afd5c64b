package state

import "fmt"

// LimitPages caps the database's size at n pages, so the next write that
// needs more fails as on a full disk, with SQLite's own SQLITE_FULL.
func (s *Store) LimitPages(n int) error {
	_, err := s.db.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", n))
	return err
}

// Exec runs a statement on the store's connection, for a test that sets
// the database up as another program (or another version) would.
func (s *Store) Exec(q string) error {
	_, err := s.db.Exec(q)
	return err
}
