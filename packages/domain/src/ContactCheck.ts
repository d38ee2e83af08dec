/**
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"

/** @since 1.0.0 */
export const ContactCheckRequest = Schema.Struct({
  phone: Schema.String.annotations({ description: "Phone to check, digits" }),
  from: Schema.optional(Schema.Union(Schema.Int, Schema.String))
}).annotations({ identifier: "ContactCheckRequest" })

/** @since 1.0.0 */
export const ContactCheck = Schema.Struct({
  phone: Schema.String,
  exists: Schema.Boolean,
  chat_id: Schema.String
}).annotations({ identifier: "ContactCheck" })
/** @since 1.0.0 */
export type ContactCheck = typeof ContactCheck.Type
