/* eslint-disable no-control-regex -- matching control characters is the point of this module */

/**
 * Control characters a terminal, a log viewer or a text field may act on: C0 (U+0000–U+001F),
 * DEL (U+007F), C1 (U+0080–U+009F), the line and paragraph separators U+2028/U+2029, and the
 * bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069), which make a name read
 * differently from what it holds ("Trojan Source"). The CLI prints them escaped with
 * @shipkey/publish's escapeControlCharacters (the same set).
 */
const controlCharacter = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** The same set less tab, line feed and carriage return: what a multi-line note may not hold. */
const controlCharacterBesidesLineBreaks =
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** C0 controls and DEL less tab and line breaks: what release notes (Markdown) may not hold. */
const terminalControl = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

export function hasTerminalControl(text: string): boolean {
  return terminalControl.test(text);
}

export function hasControlCharacter(text: string): boolean {
  return controlCharacter.test(text);
}

export function hasControlCharacterBesidesLineBreaks(text: string): boolean {
  return controlCharacterBesidesLineBreaks.test(text);
}
