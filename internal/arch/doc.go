// Package arch holds no code: its tests keep the project's shape as
// docs/architecture.md draws it (which package may import which, which
// package alone may use a dependency) and keep files and functions short
// unless they say why not.
package arch
