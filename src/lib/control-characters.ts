/* eslint-disable no-control-regex -- matching control characters is the point of this module */

/**
 * Control characters a terminal, a log viewer or a text field may act on: C0 (U+0000–U+001F),
 * DEL (U+007F), C1 (U+0080–U+009F), and the line and paragraph separators U+2028/U+2029. The
 * CLI prints them escaped with @shipkey/publish's escapeControlCharacters (the same set).
 */
const controlCharacter = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** The same set less tab, line feed and carriage return: what a multi-line note may not hold. */
const controlCharacterBesidesLineBreaks =
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u2028\u2029]/;

export function hasControlCharacter(text: string): boolean {
  return controlCharacter.test(text);
}

export function hasControlCharacterBesidesLineBreaks(text: string): boolean {
  return controlCharacterBesidesLineBreaks.test(text);
}
