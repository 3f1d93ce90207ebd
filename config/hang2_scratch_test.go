package config

import (
	"os"
	"testing"
)

func TestHang2Scratch(t *testing.T) {
	s, _ := os.ReadFile("/tmp/hang.yaml")
	c, err := Parse("f.yaml", s)
	t.Log(err)
	if c != nil {
		c.Warnings(env(nil))
		t.Log("w")
		c.Keys(env(nil))
		t.Log("k")
		c.Build(BuildOptions{Getenv: env(nil)})
	}
}
