import APNs
import FCM
import PushTransport

// How a dispatcher's push clients are set, wherever they are made (`paperboy worker` and `serve`, the demo): the
// dispatcher paces its own sends.
// - `retryPolicy = .senderPaced`: a provider busy or failing is paused and probed by the batch, and what it held back
//   goes out at the plan's rate once the provider answers (BatchSendMachine).
// - `failWaitingWhileUnreachable`: what waited for a connection while the provider could not be reached is answered
//   not sent at once, and sent again at the plan's pace, instead of all going out the moment the provider is back.

extension APNsProvider.Configuration {
    /// This configuration as a dispatcher's clients have it (see above).
    public mutating func pacedByDispatcher() {
        retryPolicy = .senderPaced
        connection.failWaitingWhileUnreachable = true
    }
}

extension FCMProvider.Configuration {
    /// This configuration as a dispatcher's clients have it (see above).
    public mutating func pacedByDispatcher() {
        retryPolicy = .senderPaced
        connection.failWaitingWhileUnreachable = true
    }
}
