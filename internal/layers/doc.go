// Package layers holds no code: its test keeps every import of the module
// pointing down the layer list of DESIGN.md ("Layers and the one direction
// of dependencies"), with the packages that list does not name placed
// where they belong. A new package fails the test until it is placed.
package layers
