/** Characters kept of any recorded string. */
export const MAX_TEXT = 256;

/**
 * Cuts a string to {@link MAX_TEXT} characters, marking the cut.
 * @param text any text
 * @returns at most MAX_TEXT + 1 characters
 */
export function clip(text: string): string {
  return text.length <= MAX_TEXT ? text : `${text.slice(0, MAX_TEXT)}…`;
}
