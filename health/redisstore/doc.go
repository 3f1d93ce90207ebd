// Package redisstore shares the circuit breaker's state among gateway
// replicas through Redis, while every read on the request path comes from
// local memory and an unreachable Redis only ever costs the sharing.
//
//	st, err := redisstore.Open(redisstore.Options{
//		URL:       "redis://redis.internal:6379/0",
//		Password:  os.Getenv("DETOUR_REDIS_PASSWORD"),
//		Namespace: "prod",
//	})
//	if err != nil {
//		return err // a bad URL or namespace; never an unreachable server
//	}
//	defer st.Close()
//	b := health.NewWithStore(health.Settings{}, st)
package redisstore
