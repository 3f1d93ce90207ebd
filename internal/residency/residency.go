// Package residency lets a long-running process give back the pages of its
// own executable that only its start touched.
//
// A Go program's start runs the initialisation of every package it links
// (a few hundred for detour), and on Linux the kernel maps the 64 KiB
// around each page a program touches (fault-around). So a program that
// links much holds megabytes of its own code, read-only data and function
// table that it will not touch again: detour serve, idle, held 14 MiB of
// file pages of its 16. [DropUntouched] unmaps them; what the program goes
// on to run comes back on its first touch, from the page cache.
package residency
