// Package sqlitestore keeps breaker state (a health.Store) in one SQLite
// file shared by every detour process on a machine, so that a wall one run
// finds is known to the next with no network call.
//
//	st := sqlitestore.Open(filepath.Join(stateDir, "health.db"), sqlitestore.Options{Logger: logger})
//	defer st.Close()
//	b := health.NewWithStore(health.Settings{}, st)
package sqlitestore
