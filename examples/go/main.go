// Command example runs one turn on an aophub hub and streams the answer.
//
//	AOPHUB_TOKEN=KEY go run ./examples/go -server http://127.0.0.1:8080 -p "hello"
//
// It opens a session on the node (the built-in "local" by default), runs the
// prompt as a turn, prints the answer as it streams, and ends with the
// session id and the cursor of the last event it read. Pass both back
// (-session ID -cursor CURSOR) to run the next turn in the same session,
// picking up exactly after that event. Connection drops while it runs are
// handled by the client: it reconnects and the watch resumes by itself.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	aophub "github.com/aophub/aophub/clients/go"
	"github.com/aophub/aophub/gen/go/aop"
)

func main() {
	server := flag.String("server", "http://127.0.0.1:8080", "the hub's URL")
	node := flag.String("node", "local", "the node to open the session on")
	prompt := flag.String("p", "hello", "the prompt")
	sessionID := flag.String("session", "", "continue this session instead of opening one")
	cursor := flag.String("cursor", "", "with -session: the cursor printed by the previous run")
	flag.Parse()
	if err := run(*server, os.Getenv("AOPHUB_TOKEN"), *node, *prompt, *sessionID, *cursor); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run(server, token, node, prompt, sessionID, cursor string) error {
	if token == "" {
		return fmt.Errorf("set AOPHUB_TOKEN to the hub's access key")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	hub, err := aophub.Connect(ctx, server, token, nil)
	if err != nil {
		return err
	}
	defer hub.Close()
	if sessionID == "" {
		session, err := hub.OpenSession(ctx, &aop.OpenSessionRequest{NodeId: node})
		if err != nil {
			return err
		}
		sessionID = session.Id
	}
	// Watch first, then run: the turn's first deltas may come before RunTurn returns.
	watch, err := hub.Watch(ctx, sessionID, cursor)
	if err != nil {
		return err
	}
	defer watch.Close()
	turn, err := hub.RunTurn(ctx, &aop.RunTurnRequest{SessionId: sessionID, Input: aophub.UserText(prompt)})
	if err != nil {
		return err
	}
	shown := map[string]string{} // message id -> the text printed from its deltas
	for d, err := range watch.Events() {
		if err != nil {
			return err
		}
		if d.Cursor != "" {
			cursor = d.Cursor
		}
		event := d.Event
		if event.GetTurnId() != turn.TurnId {
			continue // earlier turns of the session, replayed
		}
		switch {
		case event.GetMessageDelta() != nil:
			delta := event.GetMessageDelta()
			shown[delta.GetMessageId()] += delta.GetText()
			fmt.Print(delta.GetText())
		case event.GetMessage().GetRole() == "assistant":
			// The complete message is authoritative: print what deltas lost
			// to a reconnect did not show.
			full, seen := aophub.Text(event.GetMessage()), shown[event.GetMessage().GetId()]
			if strings.HasPrefix(full, seen) {
				fmt.Print(full[len(seen):])
			} else {
				fmt.Print("\n", full)
			}
		case event.GetTurnEnded() != nil:
			fmt.Printf("\n[turn %s]\nsession %s cursor %s\n", event.GetTurnEnded().GetStopReason(), sessionID, cursor)
			return nil
		}
	}
	return nil
}
