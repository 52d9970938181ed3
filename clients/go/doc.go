// Package aophub is a client for an aophub hub (or any AOP hub): its
// application WebSocket, on which programs open sessions on agent nodes, run
// turns and watch the agents' work, and its management services.
//
// A turn, with resume:
//
//	hub, err := aophub.Connect(ctx, "http://127.0.0.1:8080", token, nil)
//	if err != nil { ... }
//	defer hub.Close()
//	session, err := hub.OpenSession(ctx, &aop.OpenSessionRequest{NodeId: "local"})
//	if err != nil { ... }
//	turn, err := hub.RunTurn(ctx, &aop.RunTurnRequest{SessionId: session.Id, Input: aophub.UserText("hello")})
//	if err != nil { ... }
//	for d, err := range hub.Watch(ctx, session.Id, savedCursor) {
//		if err != nil { ... }
//		if d.Cursor != "" { savedCursor = d.Cursor } // resume from here after a restart
//		if m := d.Event.GetMessage(); m.GetRole() == "assistant" { fmt.Println(aophub.Text(m)) }
//		if d.Event.GetTurnEnded() != nil && d.Event.GetTurnId() == turn.TurnId { break }
//	}
//
// Requests are correlated by envelope id, and every request gets a new id
// that is also its idempotency key: after a disconnect the client redials
// with backoff and jitter and resends the requests still waiting with the
// same ids, and the hub answers a repeated id from its journal, so nothing
// runs twice. Each request is bounded by its context, or by
// Options.RequestTimeout when the context has no deadline. Watches resume
// from the last persisted event they received and never yield one twice.
//
// Refusals come back as *Error with a Code (CodeNotFound, CodeUnavailable,
// ...). The wire messages are the generated ones of
// github.com/aophub/aophub/gen/go/aop and .../gen/go/aophub/v1.
package aophub
