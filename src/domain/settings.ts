import { errorsOf, ShipkeyError } from "../errors.js";
import { assertMaxLength, assertMultiLine, assertSingleLine } from "./limits.js";
import {
  type CountSetting,
  type Setting,
  type SettingsTable,
  settingsOf,
  type SettingValues,
} from "../contracts/settings.js";

/**
 * Every refusal of the given values of a table's settings (contracts/settings.ts), each naming
 * its field. They come in four passes, each in the table's order: values out of range (a
 * choice, a count), texts and lists too long, malformed email addresses, then control
 * characters (one-line texts first, then list items, then multi-line texts). A caller throws the
 * first (throwFirst) or shows them all (the dashboard's FormCheck).
 */
export function settingErrors<T extends SettingsTable>(
  table: T,
  values: SettingValues<T>,
): ShipkeyError[] {
  const given = settingsOf(table).flatMap(([name, setting]) => {
    const value: unknown = values[name];
    return value === undefined ? [] : [{ name, setting, value }];
  });
  const characterOrder = ["line", "list", "lines"] as const;
  return errorsOf([
    ...given.map((g) => () => assertInRange(g.name, g.setting, g.value)),
    ...given.map((g) => () => assertLength(g.name, g.setting, g.value)),
    ...given.map((g) => () => assertFormat(g.name, g.setting, g.value)),
    ...characterOrder.flatMap((kind) =>
      given
        .filter((g) => characterKind(g.setting) === kind)
        .map((g) => () => assertCharacters(g.name, g.setting, g.value)),
    ),
  ]);
}

function assertInRange(name: string, setting: Setting, value: unknown): void {
  if (setting.kind === "choice" && !setting.values.some((v) => v === value)) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `${name} must be one of ${setting.values.join(", ")}`,
      { field: name },
    );
  }
  if (setting.kind === "count" && !inRange(setting, value)) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${name} must be ${setting.says}`, {
      field: name,
    });
  }
}

function inRange(setting: CountSetting, value: unknown): boolean {
  if (value === null) return setting.nullable;
  return (
    typeof value === "number" &&
    Number.isSafeInteger(value) &&
    value >= setting.min &&
    value <= setting.max
  );
}

function assertLength(name: string, setting: Setting, value: unknown): void {
  if (setting.kind === "text" && typeof value === "string") {
    assertMaxLength(name, value, setting.maxLength);
  }
  if (setting.kind === "list" && Array.isArray(value)) {
    if (value.length > setting.maxItems) {
      throw new ShipkeyError("INVALID_FIELD_VALUE", `at most ${setting.maxItems} ${name}`, {
        field: name,
      });
    }
    for (const [i, item] of value.entries()) {
      const path = `${name}[${i}]`;
      assertMaxLength(setting.item, String(item), setting.itemMaxLength, path);
      if (item === "") {
        throw new ShipkeyError("INVALID_FIELD_VALUE", `${name} must not be empty`, {
          field: path,
        });
      }
    }
  }
}

function assertFormat(name: string, setting: Setting, value: unknown): void {
  if (setting.kind !== "text" || setting.format !== "email") return;
  if (typeof value === "string" && value !== "" && !/^[^\s@]+@[^\s@]+$/.test(value)) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${name} must be an email address`, {
      field: name,
    });
  }
}

/** Which control-character rule a setting follows: names and labels are one line. */
function characterKind(setting: Setting): "line" | "list" | "lines" | null {
  if (setting.kind === "list") return "list";
  if (setting.kind !== "text") return null;
  return setting.format === "lines" ? "lines" : "line";
}

/** Names and labels are one line; a note may span lines (docs/reference/security.md). */
function assertCharacters(name: string, setting: Setting, value: unknown): void {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) assertSingleLine(name, String(item), `${name}[${i}]`);
  } else if (typeof value === "string") {
    if (characterKind(setting) === "lines") assertMultiLine(name, value);
    else assertSingleLine(name, value);
  }
}
