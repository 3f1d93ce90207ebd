// Package suites holds the task suites built into detour, for `detour eval`.
package suites
