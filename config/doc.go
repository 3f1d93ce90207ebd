// Package config reads detour.yaml into a typed, validated Config (providers
// with built-in presets, optional target detail, routes and the defaults
// they share, the breaker's health: settings, the gateway: section) and
// builds the router's routes from it, with keys taken from the environment
// only.
//
// Every problem in a file is reported at once, each as
// "FILE:LINE:COLUMN: FIELD: what is wrong and how to fix it". A file past
// an input limit (MaxFileSize, MaxDepth, MaxNodes, MaxEntries) is refused
// before the YAML parser builds anything. CheckServe adds what `detour
// serve` refuses beyond the file: keys too short, key variables unset. With
// no file, Default builds one route from the presets whose key variables
// are set.
//
//	c, err := config.Open(flagConfig, nil) // --config, $DETOUR_CONFIG, ./detour.yaml, or Default
//	if err != nil {
//		log.Fatal(err) // detour.yaml:7:12: routes.default.chain[2]: unknown provider "groqq" (did you mean "groq"? ...)
//	}
//	routes, err := c.Build(config.BuildOptions{})
//	r := routes[config.DefaultRoute]
package config
