/**
 * @since 1.0.0
 */
export * as AntiMailing from "./policy/AntiMailing.js"
export * as SendPolicy from "./policy/SendPolicy.js"
export * as Tiers from "./policy/Tiers.js"
export * as TrustIndex from "./policy/TrustIndex.js"
