package aophub

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/aophub/aophub/gen/go/aop"
	aophubv1 "github.com/aophub/aophub/gen/go/aophub/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// OpenSession opens a session on req.NodeId and returns it; use the
// returned Id (the hub picks one when req.SessionId is empty).
func (c *Client) OpenSession(ctx context.Context, req *aop.OpenSessionRequest, opts ...CallOption) (*aop.Session, error) {
	answer, err := c.core(ctx, &aop.ProtocolMessage{Message: &aop.ProtocolMessage_OpenSessionRequest{OpenSessionRequest: req}}, opts)
	if err != nil {
		return nil, err
	}
	return accepted[*aop.Session](answer.GetOpenSessionResponse(), answer)
}

// RunTurn starts a turn and returns its receipt once the hub accepted it.
// The turn's work arrives as events on a Watch of the session (possibly
// before this returns); the turn is over when its turn_ended event arrives.
func (c *Client) RunTurn(ctx context.Context, req *aop.RunTurnRequest, opts ...CallOption) (*aop.TurnReceipt, error) {
	answer, err := c.core(ctx, &aop.ProtocolMessage{Message: &aop.ProtocolMessage_RunTurnRequest{RunTurnRequest: req}}, opts)
	if err != nil {
		return nil, err
	}
	return accepted[*aop.TurnReceipt](answer.GetRunTurnResponse(), answer)
}

// CancelTurn cancels a running turn; the hub ends it with
// turn_ended{stop_reason: "canceled"}. A turn that is not running gives
// CodeNotFound.
func (c *Client) CancelTurn(ctx context.Context, req *aop.CancelTurnRequest, opts ...CallOption) (*aop.TurnReceipt, error) {
	answer, err := c.core(ctx, &aop.ProtocolMessage{Message: &aop.ProtocolMessage_CancelTurnRequest{CancelTurnRequest: req}}, opts)
	if err != nil {
		return nil, err
	}
	return accepted[*aop.TurnReceipt](answer.GetCancelTurnResponse(), answer)
}

// CloseSession closes a session and returns its final state.
func (c *Client) CloseSession(ctx context.Context, req *aop.CloseSessionRequest, opts ...CallOption) (*aop.Session, error) {
	answer, err := c.core(ctx, &aop.ProtocolMessage{Message: &aop.ProtocolMessage_CloseSessionRequest{CloseSessionRequest: req}}, opts)
	if err != nil {
		return nil, err
	}
	return accepted[*aop.Session](answer.GetCloseSessionResponse(), answer)
}

// ListEvents returns one page of stored events, oldest first, after
// req.AfterCursor. A short page is not the end: the end is an empty page
// (see Events, which pages for you).
func (c *Client) ListEvents(ctx context.Context, req *aop.ListEventsRequest, opts ...CallOption) (*aop.ListEventsResponse, error) {
	answer, err := c.core(ctx, &aop.ProtocolMessage{Message: &aop.ProtocolMessage_ListEventsRequest{ListEventsRequest: req}}, opts)
	if err != nil {
		return nil, err
	}
	page := answer.GetListEventsResponse()
	if page == nil {
		return nil, unexpected(answer)
	}
	return page, nil
}

// Events yields every stored event of the session after afterCursor, page
// by page (ListEvents), and ends at the stored end; an error ends it too.
func (c *Client) Events(ctx context.Context, sessionID, afterCursor string) iter.Seq2[Delivery, error] {
	return func(yield func(Delivery, error) bool) {
		for {
			page, err := c.ListEvents(ctx, &aop.ListEventsRequest{SessionId: sessionID, AfterCursor: afterCursor})
			if err != nil {
				yield(Delivery{}, err)
				return
			}
			if len(page.GetEvents()) == 0 {
				return
			}
			for _, d := range page.GetEvents() {
				if !yield(Delivery{Cursor: d.GetCursor(), Event: d.GetEvent()}, nil) {
					return
				}
			}
			afterCursor = page.GetNextCursor()
		}
	}
}

// AnswerInteraction answers a pending interaction (an approval or a client
// tool call; see InteractionOf) and returns it, now answered. The first
// answer wins: a second one gives CodeFailedPrecondition.
func (c *Client) AnswerInteraction(ctx context.Context, req *aophubv1.AnswerInteractionRequest, opts ...CallOption) (*aophubv1.Interaction, error) {
	request := &aophubv1.InteractionProtocolMessage{Message: &aophubv1.InteractionProtocolMessage_AnswerRequest{AnswerRequest: req}}
	payload, err := c.Call(ctx, mustPack(request), opts...)
	if err != nil {
		return nil, err
	}
	var answer aophubv1.InteractionProtocolMessage
	if err := payload.UnmarshalTo(&answer); err != nil {
		return nil, &Error{Code: CodeInvalidPayload, Message: fmt.Sprintf("unexpected answer %s: %v", payload.GetTypeUrl(), err)}
	}
	return accepted[*aophubv1.Interaction](answer.GetAnswerResponse(), &answer)
}

// Call sends any payload (a message of an extension namespace, e.g.
// aophub.v1.ScanProtocolMessage) and returns the hub's answer. A
// protocol_error answer becomes an *Error.
func (c *Client) Call(ctx context.Context, payload *anypb.Any, opts ...CallOption) (*anypb.Any, error) {
	answer, err := c.roundTrip(ctx, payload, opts)
	if err != nil {
		return nil, err
	}
	if answer.GetTypeUrl() == coreTypeURL {
		var message aop.ProtocolMessage
		if proto.Unmarshal(answer.GetValue(), &message) == nil && message.GetProtocolError() != nil {
			return nil, protocolError(message.GetProtocolError())
		}
	}
	return answer, nil
}

// core sends a request of the core namespace and returns the answer.
func (c *Client) core(ctx context.Context, request *aop.ProtocolMessage, opts []CallOption) (*aop.ProtocolMessage, error) {
	payload, err := c.Call(ctx, mustPack(request), opts...)
	if err != nil {
		return nil, err
	}
	var answer aop.ProtocolMessage
	if err := payload.UnmarshalTo(&answer); err != nil {
		return nil, &Error{Code: CodeInvalidPayload, Message: fmt.Sprintf("unexpected answer %s: %v", payload.GetTypeUrl(), err)}
	}
	return &answer, nil
}

// outcome is a response with oneof outcome {accepted, rejected}.
type outcome[T any] interface {
	GetAccepted() T
	GetRejected() *aop.Rejection
}

// accepted returns the response's accepted value, or its rejection as an *Error.
func accepted[T proto.Message, R outcome[T]](response R, answer proto.Message) (T, error) {
	var zero T
	if rejected := response.GetRejected(); rejected != nil {
		return zero, rejection(rejected)
	}
	value := response.GetAccepted()
	if !value.ProtoReflect().IsValid() {
		return zero, unexpected(answer)
	}
	return value, nil
}

func unexpected(answer proto.Message) error {
	return &Error{Code: CodeInvalidPayload, Message: fmt.Sprintf("the hub answered with an unexpected message: %v", answer)}
}

// UserText returns a user message with one text part: the input of a turn.
func UserText(text string) *aop.Message {
	return &aop.Message{Role: "user", Content: []*aop.Content{{Value: &aop.Content_Text{Text: &aop.TextContent{Text: text}}}}}
}

// Text returns the text parts of a message, joined.
func Text(message *aop.Message) string {
	var b strings.Builder
	for _, part := range message.GetContent() {
		b.WriteString(part.GetText().GetText())
	}
	return b.String()
}

var interactionTypeURL = typeURLPrefix + string((&aophubv1.Interaction{}).ProtoReflect().Descriptor().FullName())

// InteractionOf returns the interaction an event announces (its extension
// payload is an aophub.v1.Interaction), or nil. A pending one waits for
// AnswerInteraction; later events of the same id tell how it ended.
func InteractionOf(event *aop.Event) *aophubv1.Interaction {
	payload := event.GetExtension()
	if payload.GetTypeUrl() != interactionTypeURL {
		return nil
	}
	var interaction aophubv1.Interaction
	if payload.UnmarshalTo(&interaction) != nil {
		return nil
	}
	return &interaction
}

// Approve returns the answer to an approval: approved or not, with an
// optional reason shown to the agent.
func Approve(interactionID string, approved bool, reason string) *aophubv1.AnswerInteractionRequest {
	return &aophubv1.AnswerInteractionRequest{
		InteractionId: interactionID,
		Answer: &aophubv1.InteractionAnswer{Answer: &aophubv1.InteractionAnswer_Approval{
			Approval: &aophubv1.Approval{Approved: approved, Reason: reason},
		}},
	}
}
