/**
 * The protocol of an account's entity (id = account id): what is limited per account rather
 * than per number.
 *
 * Old and new processes exchange these messages during a rolling upgrade: a release only adds
 * optional fields to them (see this package's index).
 *
 * @since 1.0.0
 */
import * as Entity from "@effect/cluster/Entity"
import * as Rpc from "@effect/rpc/Rpc"
import { AttachmentsBusy } from "@wagate/domain/ApiError"
import * as Schema from "effect/Schema"

/** At most this many attachments are being sent for one account at a time. @since 1.0.0 */
export const MAX_ATTACHMENTS_IN_FLIGHT = 2

/** @since 1.0.0 */
export const AccountEntity = Entity.make("Account", [
  /**
   * Takes one of the account's attachment slots for `lease`, or fails with attachments_busy.
   * A lease that is never ended expires after `ttlMs`, so a lost runner cannot hold a slot.
   */
  Rpc.make("AttachmentStart", {
    payload: { lease: Schema.String, ttlMs: Schema.Int },
    error: AttachmentsBusy
  }),
  Rpc.make("AttachmentEnd", { payload: { lease: Schema.String } })
])
