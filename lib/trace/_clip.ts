/** Characters kept of any recorded string. */
export const MAX_TEXT = 256;

/**
 * Cuts a string to {@link MAX_TEXT} characters, marking the cut; a cut never
 * splits a surrogate pair (half a character would be kept, and escaped, as is).
 * @param text any text
 * @returns at most MAX_TEXT + 1 characters
 */
export function clip(text: string): string {
  if (text.length <= MAX_TEXT) return text;
  const last = text.charCodeAt(MAX_TEXT - 1);
  const end = last >= 0xd800 && last <= 0xdbff ? MAX_TEXT - 1 : MAX_TEXT;
  return `${text.slice(0, end)}…`;
}
