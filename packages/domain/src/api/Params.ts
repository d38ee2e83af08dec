/**
 * Query and path parameters shared by the groups of the HTTP contract.
 *
 * @since 1.0.0
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"

/** @since 1.0.0 */
export const FromParam = Schema.String.annotations({
  description: "Account number: its id from GET /numbers, or its phone (digits). Omitted: all numbers of the key."
})

/** @since 1.0.0 */
export const TimeParam = (description: string) =>
  Schema.String.annotations({ description: `${description}: a date (2026-11-21), ISO 8601 time or unix seconds` })

/** @since 1.0.0 */
export const PageLimit = (max: number, byDefault: number) =>
  Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, max)).annotations({
    description: `Page size, 1-${max}, default ${byDefault}`
  })

/** @since 1.0.0 */
export const Before = (what: string) =>
  Schema.NumberFromString.pipe(Schema.int()).annotations({ description: `Only ${what} with a lower id` })

const IdParam = Schema.NumberFromString.pipe(Schema.int(), Schema.positive()).annotations({
  description: "Integer id"
})

/** The `{id}` path parameter. @since 1.0.0 */
export const id = HttpApiSchema.param("id", IdParam)
