/**
 * Named sets of errors that several endpoints answer, so each endpoint lists only what sets it
 * apart. A set is a union of the errors' wire forms; the OpenAPI document and the typed client
 * see its members one by one.
 *
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"
import * as E from "../ApiError.js"

/** A request body that is not JSON or does not fit the schema. @since 1.0.0 */
export const BodyErrors = Schema.Union(E.wire(E.InvalidJson), E.wire(E.InvalidParam))

/** `from` names a number of the key's account, or is left out. @since 1.0.0 */
export const FromErrors = Schema.Union(E.wire(E.InvalidFrom), E.wire(E.NumberNotFound))

/** A read filtered by the query's parameters and `from`. @since 1.0.0 */
export const ReadErrors = Schema.Union(E.wire(E.InvalidParam), FromErrors)

/** One number must be chosen: `from`, or the account's only number. @since 1.0.0 */
export const NumberChoiceErrors = Schema.Union(FromErrors, E.wire(E.FromRequired), E.wire(E.NoNumbers))

/**
 * A call that the number's entity answers on the network: paused, not connected, over its
 * limits, or unavailable for the moment.
 *
 * @since 1.0.0
 */
export const NumberCallErrors = Schema.Union(
  E.wire(E.NumberPaused),
  E.wire(E.NotConnected),
  E.wire(E.RateLimited),
  E.wire(E.DailyLimit),
  E.wire(E.Capacity)
)

/** What only a send can answer: the message's own faults and the send-only limits. @since 1.0.0 */
export const SendErrors = Schema.Union(
  E.wire(E.InvalidTo),
  E.wire(E.EmptyText),
  E.wire(E.TextTooLong),
  E.wire(E.InvalidMedia),
  E.wire(E.MediaTooLarge),
  E.wire(E.MediaFetchFailed),
  E.wire(E.NewContactsLimit),
  E.wire(E.ColdBlocked),
  E.wire(E.SpamDetected),
  E.wire(E.AttachmentsBusy),
  E.wire(E.SendFailed),
  E.wire(E.Busy),
  E.wire(E.StorageUnavailable)
)

/** An endpoint for account keys only. @since 1.0.0 */
export const AccountKeyOnly = E.wire(E.ForbiddenForNumberKey)

/** A `{id}` path that may name nothing. @since 1.0.0 */
export const ByIdErrors = Schema.Union(E.wire(E.InvalidParam), E.wire(E.NotFound))
