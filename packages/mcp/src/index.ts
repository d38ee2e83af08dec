/**
 * The MCP tool server for AI agents: tools, their schemas and results, and the HTTP handler.
 *
 * @since 1.0.0
 */
export * as HostCheck from "./HostCheck.js"
export * as McpGateway from "./McpGateway.js"
export * as McpHttp from "./McpHttp.js"
export * as ToolResults from "./ToolResults.js"
export * as Tools from "./Tools.js"
