/**
 * The `browser` Baileys announces: `[name, browser, version]`. The phone lists a linked device
 * under the first part. Linking by QR accepts any name, so the operator's `WA_DEVICE_NAME` is
 * shown there; linking by code does not: WhatsApp checks `companion_platform_display` ("Chrome
 * (<name>)") and refuses the code registration (400 bad-request) unless the name is an
 * operating system's, so a code link is announced as Chrome on Windows (Baileys'
 * `Browsers.windows`), or on the system named in `WA_DEVICE_NAME` when it is one.
 *
 * @since 1.0.0
 */
import { Browsers } from "@whiskeysockets/baileys"

/** Operating-system names WhatsApp accepts for a device linked by code (Baileys' `Browsers`). @since 1.0.0 */
export const CODE_LINK_SYSTEMS: ReadonlyArray<readonly [string, string, string]> = [
  Browsers.windows("Chrome"),
  Browsers.macOS("Chrome"),
  Browsers.ubuntu("Chrome")
]

/** @since 1.0.0 */
export const browserFor = (deviceName: string, linking: "qr" | "code" | null): readonly [string, string, string] => {
  if (linking !== "code") return [deviceName, "Chrome", "10.0.22631"]
  const named = CODE_LINK_SYSTEMS.find(([system]) => system.toLowerCase() === deviceName.trim().toLowerCase())
  return named ?? CODE_LINK_SYSTEMS[0]!
}
