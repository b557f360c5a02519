package kit

import (
	"fmt"
	"os"
	"syscall"
)

// keepStdoutForProtocol duplicates fd 1 for the protocol and points fd 1 at stderr.
func keepStdoutForProtocol() (*os.File, error) {
	fd, err := syscall.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("dup(stdout): %w", err)
	}
	if err := syscall.Dup3(2, 1, 0); err != nil {
		return nil, fmt.Errorf("dup3(stderr, stdout): %w", err)
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "protocol-stdout"), nil
}
