/**
 * What the simulator's control surface can refuse. These are control errors of a development
 * tool, not errors of the public contract: the sim HTTP handlers map them onto the API errors.
 *
 * @since 1.0.0
 */
import * as Data from "effect/Data"

/** The phone is not a number the simulator has seen a session for. @since 1.0.0 */
export class SimUnknownNumber extends Data.TaggedError("SimUnknownNumber")<{ readonly phone: string }> {
  override get message() {
    return `The simulator knows no number ${this.phone}`
  }
}

/**
 * The number is not in a state that allows the action: scanning when no QR is shown, pairing
 * when no code is shown, disconnecting a number that is not connected.
 *
 * @since 1.0.0
 */
export class SimWrongState extends Data.TaggedError("SimWrongState")<{
  readonly phone: string
  readonly status: string
  readonly reason: string
}> {
  override get message() {
    return `Number ${this.phone} (status ${this.status}): ${this.reason}`
  }
}

/** The pairing code entered is not the one the number shows. @since 1.0.0 */
export class SimWrongPairingCode extends Data.TaggedError("SimWrongPairingCode")<{ readonly phone: string }> {
  override get message() {
    return `The pairing code does not match the one number ${this.phone} shows`
  }
}
