/**
 * The variables of the developer's shell that a program run by a test keeps: what finding
 * programs and files needs (PATH, HOME, the temporary directory, the locale, Windows' system
 * folders), Node's and npm's own settings (NODE_*, npm_config_*) and the suite's TEST_*. Nothing
 * the service or the CLI reads (SHIPKEY_*, DATABASE_URL, PORT, HOST, PUBLIC_URL, TRUST_PROXY,
 * RATE_LIMITS, LOG_LEVEL, REDIS_URL, ... in src/config.ts) matches, so a test gives those itself.
 */
const inherited =
  /^(PATH|PATHEXT|HOME|USERPROFILE|USER|USERNAME|LOGNAME|SHELL|TERM|TMPDIR|TMP|TEMP|LANG|LANGUAGE|LC_[A-Z]+|TZ|SYSTEMROOT|WINDIR|COMSPEC|APPDATA|LOCALAPPDATA|PROGRAMDATA|NODE_[A-Z_]+|NPM_CONFIG_[A-Z0-9_-]+|TEST_[A-Z0-9_]+)$/i;

/**
 * The environment for a program a test runs (the server, the CLI, the publisher, a tool): the
 * shell's variables that `inherited` keeps, then `variables` (an undefined value removes one).
 * `npm test` so behaves the same whatever the shell exports (docs/ARCHITECTURE.md, Conventions).
 */
export function testEnvironment(
  variables: Record<string, string | undefined> = {},
): Record<string, string> {
  const kept = Object.entries(process.env).filter(([name]) => inherited.test(name));
  const env = new Map([...kept, ...Object.entries(variables)]);
  return Object.fromEntries(
    [...env].filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}
