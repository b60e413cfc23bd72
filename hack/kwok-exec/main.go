// Command kwok-exec is the kubelet port of the KWOK nodes in the dev remote clusters: it serves
// `exec` as a kubelet does, with the kubelet's own streaming library (k8s.io/cri-streaming at the
// pinned Kubernetes release), running each command as a local process in one directory, and hands
// every other kubelet path (containerLogs, attach, portForward, metrics, healthz, ...) unchanged to
// KWOK's own server.
//
// KWOK v0.8.0 serves exec itself, but reports a non-zero exit as an internal error and never ends
// the process's stdin; here the exit status reaches kubectl (NonZeroExitCode/ExitCode) and the end
// of the client's stdin closes the process's stdin, so `kubectl exec -i ... cat` and `kubectl cp`
// to a pod return.
//
// A dev convenience only: commands run as the user running the dev environment, and callers are
// not authenticated (like KWOK's server). Listen on loopback.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"syscall"
	"time"

	"github.com/creack/pty"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// The kubelet's streaming defaults (k8s.io/cri-streaming streaming.DefaultConfig).
const streamIdleTimeout = 4 * time.Hour

// How long a finished command's terminal may still be read, should a process it left behind keep
// the terminal open.
const terminalDrain = 2 * time.Second

// localExecutor runs every command as a local process in dir, whatever the pod and container.
type localExecutor struct{ dir string }

var _ remotecommand.Executor = localExecutor{}

func (e localExecutor) ExecInContainer(ctx context.Context, _, _, _ string, cmd []string, in io.Reader,
	out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration,
) error {
	if len(cmd) == 0 {
		return errors.New("no command given")
	}
	c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
	c.Dir = e.dir
	var err error
	if tty {
		err = runInTerminal(c, in, out, resize)
	} else {
		err = runWithPipes(c, in, out, errOut)
	}
	return exitError(err)
}

// runWithPipes runs c with the streams the client asked for; the end of the client's stdin closes
// the process's stdin. c ends when the process does, even if the client keeps stdin open.
func runWithPipes(c *exec.Cmd, in io.Reader, out, errOut io.Writer) error {
	c.Stdout, c.Stderr = out, errOut
	var stdin io.WriteCloser
	if in != nil {
		pipe, err := c.StdinPipe()
		if err != nil {
			return err
		}
		stdin = pipe
	}
	if err := c.Start(); err != nil {
		return err
	}
	if stdin != nil {
		go func() {
			_, _ = io.Copy(stdin, in)
			_ = stdin.Close()
		}()
	}
	return c.Wait()
}

// runInTerminal runs c in a new pseudo-terminal that follows the client's resizes.
func runInTerminal(c *exec.Cmd, in io.Reader, out io.Writer, resize <-chan remotecommand.TerminalSize) error {
	terminal, err := pty.Start(c)
	if err != nil {
		return err
	}
	defer func() { _ = terminal.Close() }()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case size, ok := <-resize:
				if !ok {
					return
				}
				_ = pty.Setsize(terminal, &pty.Winsize{Rows: size.Height, Cols: size.Width})
			case <-done:
				return
			}
		}
	}()
	if in != nil {
		go func() { _, _ = io.Copy(terminal, in) }()
	}
	if out == nil {
		out = io.Discard
	}
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(out, terminal) // until the process side of the terminal is closed
		close(copied)
	}()
	err = c.Wait()
	select {
	case <-copied:
	case <-time.After(terminalDrain):
	}
	return err
}

// exitError turns a process's non-zero exit into the error the streaming library reports as
// NonZeroExitCode with its ExitCode (a signal-killed process exits 128+signal, as in a shell).
func exitError(err error) error {
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		return err
	}
	code := exitErr.ExitCode()
	if status, ok := exitErr.Sys().(syscall.WaitStatus); ok && status.Signaled() {
		code = 128 + int(status.Signal())
	}
	return utilexec.CodeExitError{Err: err, Code: code}
}

func execHandler(executor remotecommand.Executor) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		opts, err := remotecommand.NewOptions(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		pod := r.PathValue("pod") + "/" + r.PathValue("namespace")
		remotecommand.ServeExec(w, r, executor, pod, r.PathValue("uid"), r.PathValue("container"),
			r.URL.Query()["command"], opts, streamIdleTimeout, remotecommand.DefaultStreamCreationTimeout,
			remotecommand.SupportedStreamingProtocols)
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:10250", "address to serve the kubelet API on (TLS)")
	upstream := flag.String("upstream", "", "KWOK's server, which serves every path but exec (http://host:port)")
	dir := flag.String("workdir", "", "directory the commands run in")
	certFile := flag.String("tls-cert-file", "", "TLS certificate")
	keyFile := flag.String("tls-private-key-file", "", "TLS private key")
	flag.Parse()
	target, err := url.Parse(*upstream)
	if err != nil || target.Host == "" || *dir == "" || *certFile == "" || *keyFile == "" {
		log.Fatalf("kwok-exec: --upstream URL, --workdir, --tls-cert-file and --tls-private-key-file are required")
	}

	mux := http.NewServeMux()
	handler := execHandler(localExecutor{dir: *dir})
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		mux.Handle(method+" /exec/{namespace}/{pod}/{container}", handler)
		mux.Handle(method+" /exec/{namespace}/{pod}/{uid}/{container}", handler)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // followed logs and upgraded streams pass as they come
	mux.Handle("/", proxy)

	server := &http.Server{
		Addr:              *listen,
		Handler:           mux,
		ReadHeaderTimeout: 30 * time.Second,
		// HTTP/1.1 only: exec and the proxied upgrades take over the connection.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	fmt.Printf("kwok-exec: serving on %s, exec in %s, every other path to %s\n", *listen, *dir, target)
	log.Fatal(server.ListenAndServeTLS(*certFile, *keyFile))
}
