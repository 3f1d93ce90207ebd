package redisstore

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// LogDriverTo sends the Redis client library's own log lines (a failed
// dial per attempt while Redis is away, which it otherwise prints on
// stderr) to l at debug level: the Store reports each outage once, at
// warn, itself. The library's logger is process-wide, so a command calls
// this once, before Open.
func LogDriverTo(l *slog.Logger) {
	redis.SetLogger(driverLog{l})
}

// driverLog adapts slog to the library's Printf logger.
type driverLog struct{ l *slog.Logger }

func (d driverLog) Printf(ctx context.Context, format string, v ...any) {
	d.l.DebugContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}
