package health

// StoreKind is where a breaker's state lives.
type StoreKind string

// The stores of health.store.
const (
	// StoreMemory keeps health in the process: lost when it exits.
	StoreMemory StoreKind = "memory"
	// StoreSQLite keeps it in a file every detour process on the machine
	// shares (health/sqlitestore).
	StoreSQLite StoreKind = "sqlite"
	// StoreRedis keeps it in Redis, shared by gateway replicas
	// (health/redisstore).
	StoreRedis StoreKind = "redis"
)

// StoreSpec names a breaker's store: the kind, and the SQLite file or the
// Redis URL. config reads it from health.store (config.ParseStore);
// health/stores opens it.
type StoreSpec struct {
	Kind StoreKind
	// Path is the SQLite file; "" means the default, beside the ledger.
	Path string
	// URL is the Redis URL (redis:// or rediss://), with no password.
	URL string
}
