// Generated from packages/publish/src by `npm run build:action`: edit the source, then run it.
/* eslint-disable no-control-regex -- matching control characters is the point of this module */
/**
 * Control characters a terminal or a log viewer may act on: C0 (U+0000–U+001F), DEL (U+007F),
 * C1 (U+0080–U+009F), the line and paragraph separators U+2028/U+2029, and the bidirectional
 * overrides and isolates (U+202A–U+202E, U+2066–U+2069).
 */
const controlCharacters = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const shortEscapes = { "\t": "\\t", "\n": "\\n", "\r": "\\r" };
/** Every control character written as an escape: `\n`, `\x1b`, `\x85`, `\u2028`. */
export function escapeControlCharacters(text) {
    return text.replace(controlCharacters, (c) => {
        const code = c.charCodeAt(0);
        const short = shortEscapes[c];
        if (short !== undefined)
            return short;
        return code <= 0xff
            ? `\\x${code.toString(16).padStart(2, "0")}`
            : `\\u${code.toString(16).padStart(4, "0")}`;
    });
}
