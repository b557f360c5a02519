//go:build unix

package protocol

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// The child half of TestStdinOfAPipeIsPolled: reports what Stdin gave and echoes a line read
// through it.
func TestStdinChild(t *testing.T) {
	if os.Getenv("PROTOCOL_STDIN_CHILD") == "" {
		t.Skip("run by TestStdinOfAPipeIsPolled")
	}
	f := Stdin()
	flags, err := fcntlFlags(0)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("replaced=%v nonblock=%v same=%v line=%s", f != os.Stdin, flags&syscall.O_NONBLOCK != 0, Stdin() == f, line)
}

func fcntlFlags(fd uintptr) (uintptr, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return r, nil
}

func TestStdinOfAPipeIsPolled(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestStdinChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), "PROTOCOL_STDIN_CHILD=1")
	cmd.Stdin = strings.NewReader("{\"kind\":\"stop\"}\n") // exec gives the child a pipe
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	want := "replaced=true nonblock=true same=true line={\"kind\":\"stop\"}\n"
	if !strings.HasPrefix(string(out), want) {
		t.Fatalf("child said %q, want it to start with %q", out, want)
	}
}

func TestStdinOfAFileIsOsStdin(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "{\"kind\":\"stop\"}")
	f.Close()
	in, err := os.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStdinChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), "PROTOCOL_STDIN_CHILD=1")
	cmd.Stdin = in
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "replaced=false nonblock=false same=true line=") {
		t.Fatalf("child said %q", out)
	}
}
