// goref: the Go reference for scripts/bench (issue 14). A JSON-RPC 2.0 WebSocket bridge on gorilla/websocket that does
// the same work as `oa-bridge serve --auth none` on the benchmarked paths, so that the two are compared side by side:
//
//   - round trips: every text frame is parsed as JSON; `initialize` gets a result, `session/prompt` for a session the
//     bridge does not know gets a JSON-RPC error (what the load generator's requests get from oa-bridge), any other
//     method "method not found";
//   - relay: with -agent, one stdio ACP agent runs behind it; `session/new` and `session/prompt` are forwarded with
//     ids mapped, `session/load` of a live session attaches the connection, and every agent line is parsed,
//     `session/update` stamped with `_meta.seq` (per session, from 1), re-encoded once and sent to every attached
//     connection. A connection with 10,000 frames queued is cut off, as oa-bridge does.
//
// Built with Debian's golang-go and golang-github-gorilla-websocket-dev (GOPATH mode, no module download):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o goref bench/goref/main.go
//	./goref -port 9199 [-agent "python3 bench/flood_agent.py"] [-cert tls-cert.pem -key tls-key.pem]
//
// With -cert and -key (issue 32) it serves wss:// only, through Go's crypto/tls with its defaults (TLS 1.3, session
// tickets), HTTP/1.1 only (no h2 in ALPN, as a WebSocket needs), with the bridge's own identity from its state dir.
package main

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/gorilla/websocket"
)

const maxQueued = 10000

var upgrader = websocket.Upgrader{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10,
	CheckOrigin: func(*http.Request) bool { return true }}

// conn is one WebSocket client: a queue drained by its own writer goroutine.
type conn struct {
	ws     *websocket.Conn
	out    chan []byte
	done   chan struct{}
	closed sync.Once
}

func (c *conn) send(frame []byte) {
	select {
	case c.out <- frame:
	default:
		c.close() // stopped reading: cut off, as oa-bridge does past 10,000 queued frames
	}
}

func (c *conn) close() { c.closed.Do(func() { close(c.done); c.ws.Close() }) }

func (c *conn) writer() {
	for {
		select {
		case frame := <-c.out:
			if err := c.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
				c.close()
				return
			}
		case <-c.done:
			return
		}
	}
}

type pending struct {
	c        *conn
	id       json.RawMessage
	register bool // a session/new: attach c to the session in the answer
}

type session struct {
	seq      int64
	attached []*conn
}

// bridge is the shared state: the agent's stdin, the requests in flight to it, the sessions.
type bridge struct {
	mu       sync.Mutex
	agentIn  io.Writer
	nextID   int64
	pending  map[int64]pending
	sessions map[string]*session
}

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

func marshal(v interface{}) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		log.Fatal(err)
	}
	return b
}

func errorFrame(id json.RawMessage, code int, text string) []byte {
	return marshal(map[string]interface{}{"jsonrpc": "2.0", "id": id,
		"error": map[string]interface{}{"code": code, "message": text}})
}

func (b *bridge) forward(c *conn, m map[string]interface{}, id json.RawMessage, register bool) {
	b.mu.Lock()
	b.nextID++
	agentID := b.nextID
	b.pending[agentID] = pending{c: c, id: id, register: register}
	m["id"] = agentID
	line := append(marshal(m), '\n')
	_, err := b.agentIn.Write(line)
	b.mu.Unlock()
	if err != nil {
		c.send(errorFrame(id, -32603, "agent unavailable"))
	}
}

func (b *bridge) handle(c *conn, data []byte) {
	var m map[string]interface{}
	if err := json.Unmarshal(data, &m); err != nil {
		c.send(errorFrame(json.RawMessage("null"), -32700, "parse error"))
		return
	}
	var head message
	_ = json.Unmarshal(data, &head)
	switch head.Method {
	case "initialize":
		c.send(marshal(map[string]interface{}{"jsonrpc": "2.0", "id": head.ID, "result": map[string]interface{}{
			"protocolVersion": 1, "agentCapabilities": map[string]interface{}{"loadSession": true},
			"authMethods": []interface{}{}}}))
	case "session/new":
		if b.agentIn == nil {
			c.send(errorFrame(head.ID, -32603, "no agent"))
			return
		}
		b.forward(c, m, head.ID, true)
	case "session/load":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(head.Params, &p)
		b.mu.Lock()
		s, ok := b.sessions[p.SessionID]
		if ok {
			s.attached = append(s.attached, c)
		}
		b.mu.Unlock()
		if !ok {
			c.send(errorFrame(head.ID, -32602, "unknown session "+p.SessionID))
			return
		}
		c.send(marshal(map[string]interface{}{"jsonrpc": "2.0", "id": head.ID, "result": map[string]interface{}{}}))
	case "session/prompt":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(head.Params, &p)
		b.mu.Lock()
		_, ok := b.sessions[p.SessionID]
		b.mu.Unlock()
		if !ok || b.agentIn == nil {
			c.send(errorFrame(head.ID, -32602, "unknown session "+p.SessionID))
			return
		}
		b.forward(c, m, head.ID, false)
	default:
		c.send(errorFrame(head.ID, -32601, "method not found: "+head.Method))
	}
}

// agentLines reads the agent's stdout: answers go to the client that asked, session/update to every attached client.
func (b *bridge) agentLines(r io.Reader) {
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for scanner.Scan() {
		var m map[string]interface{}
		if err := json.Unmarshal(scanner.Bytes(), &m); err != nil {
			continue
		}
		if method, _ := m["method"].(string); method == "session/update" {
			params, _ := m["params"].(map[string]interface{})
			id, _ := params["sessionId"].(string)
			b.mu.Lock()
			s := b.sessions[id]
			if s == nil {
				b.mu.Unlock()
				continue
			}
			s.seq++
			meta, _ := params["_meta"].(map[string]interface{})
			if meta == nil {
				meta = map[string]interface{}{}
				params["_meta"] = meta
			}
			meta["seq"] = s.seq
			frame := marshal(m)
			for _, c := range s.attached {
				c.send(frame)
			}
			b.mu.Unlock()
			continue
		}
		idNumber, ok := m["id"].(float64)
		if !ok {
			continue
		}
		b.mu.Lock()
		p, ok := b.pending[int64(idNumber)]
		delete(b.pending, int64(idNumber))
		if ok && p.register {
			if result, _ := m["result"].(map[string]interface{}); result != nil {
				if sid, _ := result["sessionId"].(string); sid != "" {
					b.sessions[sid] = &session{attached: []*conn{p.c}}
				}
			}
		}
		b.mu.Unlock()
		if ok {
			m["id"] = p.id
			p.c.send(marshal(m))
		}
	}
}

func (b *bridge) startAgent(command string) error {
	fields := strings.Fields(command)
	cmd := exec.Command(fields[0], fields[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	reader := bufio.NewReaderSize(out, 1<<20)
	// The bridge initializes its agent once, before the first client's session.
	if _, err := in.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n")); err != nil {
		return err
	}
	if _, err := reader.ReadBytes('\n'); err != nil {
		return fmt.Errorf("agent initialize: %w", err)
	}
	b.agentIn = in
	go b.agentLines(reader)
	return nil
}

func main() {
	port := flag.Int("port", 9199, "TCP port on 127.0.0.1")
	agent := flag.String("agent", "", "stdio ACP agent command (relay)")
	certFile := flag.String("cert", "", "PEM certificate: serve TLS (wss://) with it and -key")
	keyFile := flag.String("key", "", "PEM private key for -cert")
	flag.Parse()
	b := &bridge{pending: map[int64]pending{}, sessions: map[string]*session{}}
	if *agent != "" {
		if err := b.startAgent(*agent); err != nil {
			log.Fatal(err)
		}
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		ws, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		ws.SetReadLimit(16 << 20)
		c := &conn{ws: ws, out: make(chan []byte, maxQueued), done: make(chan struct{})}
		go c.writer()
		defer func() {
			c.close()
			b.mu.Lock()
			for _, s := range b.sessions {
				for i, other := range s.attached {
					if other == c {
						s.attached = append(s.attached[:i], s.attached[i+1:]...)
						break
					}
				}
			}
			b.mu.Unlock()
		}()
		for {
			kind, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if kind == websocket.TextMessage {
				b.handle(c, data)
			}
		}
	})
	address := fmt.Sprintf("127.0.0.1:%d", *port)
	if *certFile != "" {
		server := &http.Server{Addr: address,
			// An empty map turns HTTP/2 off: ALPN offers http/1.1 only, like the bridge.
			TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}}
		log.Fatal(server.ListenAndServeTLS(*certFile, *keyFile))
	}
	log.Fatal(http.ListenAndServe(address, nil))
}
