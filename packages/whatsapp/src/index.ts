/**
 * The WhatsApp network port and its simulator.
 *
 * @since 1.0.0
 */
export * as SimAgenda from "./SimAgenda.js"
export * as SimApi from "./SimApi.js"
export * as SimConfig from "./SimConfig.js"
export * as SimDelivery from "./SimDelivery.js"
export * as SimDevice from "./SimDevice.js"
export * as SimErrors from "./SimErrors.js"
export * as SimInbound from "./SimInbound.js"
export * as SimLinkCodes from "./SimLinkCodes.js"
export * as SimLinking from "./SimLinking.js"
export * as SimMailbox from "./SimMailbox.js"
export * as SimModel from "./SimModel.js"
export * as SimNetwork from "./SimNetwork.js"
export * as SimSentMessage from "./SimSentMessage.js"
export * as SimSession from "./SimSession.js"
export * as SimulatorDriver from "./SimulatorDriver.js"
export * as WhatsAppDriver from "./WhatsAppDriver.js"
