//go:build !unix

package protocol

import "os"

// Stdin is the process's standard input to read messages from (see stdin_unix.go).
func Stdin() *os.File { return os.Stdin }
