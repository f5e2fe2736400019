package fleettest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/proctest"
)

// Nginx is nginx running as a round-robin load balancer on loopback.
type Nginx struct {
	// Addr is where it listens; URL its base URL.
	Addr, URL string
	dir       string
	cmd       *exec.Cmd
	done      chan struct{}
	out       *proctest.Buffer
}

// config is nginx's configuration: one process (master_process off),
// everything under the test's folder, no sticky sessions, buffering off
// both ways (by the configuration alone: the replicas' X-Accel-Buffering
// is ignored, so a test shows what the configuration does), HTTP/1.1 and WebSocket upgrades to the replicas, and the
// answering replica in X-Upstream. A replica that refuses the connection
// (killed) is skipped for the next one; max_fails=0 keeps trying it, so a
// restarted replica gets its share again at once.
const config = `worker_processes 1;
master_process off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
  access_log %[1]s/access.log;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  map $http_upgrade $connection_upgrade { default upgrade; '' ''; }
  upstream fleet {
%[2]s  }
  server {
    listen %[3]s;
    client_max_body_size 64m;
    location / {
      proxy_pass http://fleet;
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_buffering off;
      proxy_ignore_headers X-Accel-Buffering;
      proxy_request_buffering off;
      proxy_cache off;
      proxy_connect_timeout 2s;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
      proxy_next_upstream error timeout;
      add_header X-Upstream $upstream_addr always;
    }
  }
}
`

// StartNginx starts nginx in front of upstreams (host:port each) for t.
func StartNginx(t testing.TB, upstreams []string) *Nginx {
	t.Helper()
	need(t, "nginx")
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
	}
	n := &Nginx{Addr: proctest.FreeAddr(t), dir: t.TempDir(), done: make(chan struct{}), out: &proctest.Buffer{}}
	n.URL = "http://" + n.Addr
	var servers strings.Builder
	for _, u := range upstreams {
		fmt.Fprintf(&servers, "    server %s max_fails=0;\n", u)
	}
	conf := filepath.Join(n.dir, "nginx.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, config, n.dir, servers.String(), n.Addr), 0o644); err != nil {
		t.Fatal(err)
	}
	n.cmd = exec.Command(bin, "-p", n.dir, "-c", conf, "-e", filepath.Join(n.dir, "error.log"), "-g", "daemon off;")
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = n.cmd.Wait(); close(n.done) }()
	t.Cleanup(n.stop)
	// Any answer (even a 502 with no replica up) means nginx listens.
	proctest.WaitHTTP(t, n.URL+"/healthz", n.done, 10*time.Second, "nginx", func() string { return n.out.String() + " " + n.ErrorLog() })
	return n
}

// ErrorLog returns nginx's error log.
func (n *Nginx) ErrorLog() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "error.log"))
	return string(b)
}

func (n *Nginx) stop() {
	_ = n.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-n.done:
	case <-time.After(5 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
	}
}
