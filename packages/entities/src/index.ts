/**
 * The protocols of the cluster's entities: the messages between processes.
 *
 * Processes of two releases call each other while a rolling upgrade is under way
 * (docs/operations.md, "Rolling upgrade"): a new api process asks an old runner, an old runner
 * asks a new one. So a release changes a payload or a reply only by adding a field, and the
 * field is optional on the way in, with a default for the message of a process that does not
 * send it yet (`Schema.optionalWith(..., { default })`, as `NumberEntity.LimitsReply`), while the
 * process that knows it always sends it. A field is never removed, renamed, made required, or
 * given another meaning; a field a process does not know is ignored when it decodes. A schema of
 * `@wagate/domain` used here is part of these messages too: a field added to it for the public
 * API is made optional here (test/NumberEntity.test.ts decodes the previous release's messages).
 *
 * @since 1.0.0
 */
export * as AccountEntity from "./AccountEntity.js"
export * as NumberEntity from "./NumberEntity.js"
export * as WebhookEntity from "./WebhookEntity.js"
export * as ExportEntity from "./ExportEntity.js"
