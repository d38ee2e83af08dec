/**
 * @since 1.0.0
 */
export * as OpsClient from "./OpsClient.js"
export * as WagateClient from "./WagateClient.js"
