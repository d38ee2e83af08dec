/**
 * The wagate contract: schemas, errors and the HTTP API.
 *
 * @since 1.0.0
 */
export * as Account from "./Account.js"
export * as Api from "./Api.js"
export * as ApiError from "./ApiError.js"
export * as ArchiveExport from "./ArchiveExport.js"
export * as Auth from "./Auth.js"
export * as Chat from "./Chat.js"
export * as Connection from "./Connection.js"
export * as ContactCheck from "./ContactCheck.js"
export * as Ids from "./Ids.js"
export * as Limits from "./Limits.js"
export * as LinkedNumber from "./LinkedNumber.js"
export * as Message from "./Message.js"
export * as SendMessage from "./SendMessage.js"
export * as ServiceStatus from "./ServiceStatus.js"
export * as Storage from "./Storage.js"
export * as Webhook from "./Webhook.js"
export * as OpsApi from "./OpsApi.js"
export * as Almaty from "./Almaty.js"
export * as Pricing from "./Pricing.js"
export * as StoragePricing from "./StoragePricing.js"
