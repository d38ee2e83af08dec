/**
 * WhatsApp addresses (JIDs) as the gateway shows them: one-to-one chats as `<phone>@c.us`,
 * groups as `<id>@g.us`, people by their phone digits, LID identities as `<lid>@lid`.
 *
 * @since 1.0.0
 */

/** The user part: no device (`:3`), agent (`_1`) or server. @since 1.0.0 */
export const userOf = (jid: string): string => {
  const at = jid.indexOf("@")
  const user = at === -1 ? jid : jid.slice(0, at)
  return user.split(":")[0]!.split("_")[0]!
}

const serverOf = (jid: string | null | undefined): string | null => {
  if (typeof jid !== "string") return null
  const at = jid.indexOf("@")
  return at === -1 ? null : jid.slice(at + 1)
}

/** A phone-number identity. @since 1.0.0 */
export const isPhone = (jid: string | null | undefined): jid is string =>
  serverOf(jid) === "s.whatsapp.net" || serverOf(jid) === "c.us"

/** A LID (hidden identity) of a person. @since 1.0.0 */
export const isLid = (jid: string | null | undefined): jid is string => serverOf(jid) === "lid"

/** @since 1.0.0 */
export const isGroup = (jid: string | null | undefined): jid is string => serverOf(jid) === "g.us"

/**
 * Status updates, broadcast lists, channels and WhatsApp's own service account (`0@s.whatsapp.net`,
 * its announcements): not conversations of the number.
 *
 * @since 1.0.0
 */
export const isIgnored = (jid: string | null | undefined): boolean => {
  const server = serverOf(jid)
  return server === null || server === "broadcast" || server === "newsletter" || server === "call" ||
    (server === "s.whatsapp.net" && userOf(jid!) === "0")
}

/** Where a message to `phone` goes. @since 1.0.0 */
export const phoneJid = (phone: string): string => `${phone}@s.whatsapp.net`

/**
 * Where a message goes: a phone (digits, or `<phone>@c.us` / `@s.whatsapp.net`) to its phone JID,
 * a LID (`<lid>@lid`) as it is, a group (`<id>@g.us`) as it is.
 *
 * @since 1.0.0
 */
export const sendJid = (to: string): string =>
  isLid(to) || isGroup(to) ? `${userOf(to)}@${serverOf(to)}` : phoneJid(userOf(to))

/** @since 1.0.0 */
export const chatOf = (phone: string): string => `${phone}@c.us`

/** `<user>@lid` without device. @since 1.0.0 */
export const lidOf = (jid: string): string => `${userOf(jid)}@lid`
