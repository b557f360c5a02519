//go:build !linux

package kit

import "os"

// keepStdoutForProtocol: elsewhere than Linux fd 1 stays as it is (nothing may print to stdout).
func keepStdoutForProtocol() (*os.File, error) { return os.Stdout, nil }
