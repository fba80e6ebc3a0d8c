import { type Static, type TSchema, Type } from "typebox";
import { NullableInteger, NullableString, StringEnum } from "./kit.js";
import { limits } from "./vocabulary.js";

/**
 * Settings, each defined once in a table (license-settings.ts, product-settings.ts): its kind and
 * limits, which give the admin API's schema and the domain's refusals (domain/settings.ts), and
 * the dashboard's field and the CLI's option that set it. Every surface reads the table rather
 * than restating a setting's name, limits, message or help.
 */

/** How the CLI sets a setting: `--<option> <value>`, or `|<orNull>` for null, with its help line. */
export interface CliOption {
  option: string;
  value: string;
  /** The word that stands for null (`none`, `never`, `product`). */
  orNull?: string;
  help: string;
}

/** The CLI's option: the same on every command, or one for create and one for update. */
export type CliOptions = CliOption | { create: CliOption; update: CliOption };

/** The dashboard's field for a setting: a hint beside its label. Its input follows from the kind. */
export interface FormField {
  hint?: string;
}

/** Where a setting appears besides the admin API; absent: not there. */
export interface Surfaces {
  /** How the dashboard names the setting: its field's label, a license history's changes. */
  label?: string;
  form?: FormField;
  cli?: CliOptions;
  /** Required when the record is created (its create body and command need it). */
  requiredOnCreate?: true;
}

/** One of a list of words (a license's status); `default`: a new record's when none is given. */
export interface ChoiceSetting extends Surfaces {
  kind: "choice";
  values: readonly string[];
  default?: string;
  schema: TSchema;
}

/** A whole number in a range; nullable: null is a value too (a limit that is off). */
export interface CountSetting extends Surfaces {
  kind: "count";
  min: number;
  max: number;
  nullable: boolean;
  /** What a refused value must be: `<name> must be <says>`. */
  says: string;
  schema: TSchema;
}

/** Text of at most maxLength characters: one line, an email address, or several lines. */
export interface TextSetting extends Surfaces {
  kind: "text";
  maxLength: number;
  format: "line" | "email" | "lines";
  schema: TSchema;
}

/** A list of one-line names (a license's features); `item` names one in refusals. */
export interface ListSetting extends Surfaces {
  kind: "list";
  item: string;
  maxItems: number;
  itemMaxLength: number;
  schema: TSchema;
}

/** A moment or null: ISO 8601 text on the admin API, epoch ms in the domain. */
export interface TimeSetting extends Surfaces {
  kind: "time";
  /** What refused text must be: `<name> must be <says>`. */
  says: string;
  schema: TSchema;
}

export type Setting = ChoiceSetting | CountSetting | TextSetting | ListSetting | TimeSetting;
export type SettingsTable = Record<string, Setting>;

export const choice = <
  const V extends readonly string[],
  const X extends Surfaces & { default?: V[number] },
>(
  values: V,
  surfaces: X,
) => ({ kind: "choice" as const, values, schema: StringEnum(values), ...surfaces });

/** A whole number from min to max: `a whole number from <min> to <max>` unless `says` differs. */
export const count = <const X extends Surfaces & { description?: string; says?: string }>(
  range: { min: number; max: number },
  surfaces: X,
) => {
  const { description, says, ...rest } = surfaces;
  const bounds = { minimum: range.min, maximum: range.max };
  return {
    kind: "count" as const,
    min: range.min,
    max: range.max,
    nullable: false as const,
    says: says ?? `a whole number from ${range.min} to ${range.max}`,
    schema: Type.Integer(description === undefined ? bounds : { ...bounds, description }),
    ...rest,
  };
};

/** A whole number from min to max, or null. */
export const nullableCount = <const X extends Surfaces & { description: string }>(
  range: { min: number; max: number },
  surfaces: X,
) => {
  const { description, ...rest } = surfaces;
  return {
    kind: "count" as const,
    min: range.min,
    max: range.max,
    nullable: true as const,
    says: `a whole number from ${range.min} to ${range.max}, or null`,
    schema: NullableInteger({ minimum: range.min, maximum: range.max, description }),
    ...rest,
  };
};

/** Text or null; "" is stored as null. */
export const text = <const X extends Surfaces>(
  maxLength: number,
  format: TextSetting["format"],
  surfaces: X,
) => ({
  kind: "text" as const,
  maxLength,
  format,
  schema: NullableString({ maxLength }),
  ...surfaces,
});

export const list = <const X extends Surfaces>(
  item: string,
  bounds: { maxItems: number; itemMaxLength: number },
  surfaces: X,
) => ({
  kind: "list" as const,
  item,
  ...bounds,
  schema: Type.Array(Type.String({ minLength: 1, maxLength: bounds.itemMaxLength }), {
    maxItems: bounds.maxItems,
  }),
  ...surfaces,
});

export const time = <const X extends Surfaces>(description: string, surfaces: X) => ({
  kind: "time" as const,
  says: "an ISO 8601 timestamp with a zone, or null",
  schema: NullableString({ maxLength: limits.timestamp, description }),
  ...surfaces,
});

/** A table's settings as the admin API takes them: each one's schema, in the table's order. */
export const settingProperties = <T extends SettingsTable>(table: T) =>
  Object.fromEntries(Object.entries(table).map(([name, s]) => [name, s.schema])) as {
    [K in keyof T]: T[K]["schema"];
  };

/** Every property optional (a change gives only what changes). */
export const optional = <P extends Record<string, TSchema>>(properties: P) =>
  Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, Type.Optional(v)])) as {
    [K in keyof P]: ReturnType<typeof Type.Optional<P[K]>>;
  };

/** A table's settings as a new record's body takes them: those required on create are. */
export const createProperties = <T extends SettingsTable>(table: T) =>
  Object.fromEntries(
    Object.entries(table).map(([name, s]) => [
      name,
      s.requiredOnCreate ? s.schema : Type.Optional(s.schema),
    ]),
  ) as {
    [K in keyof T]: T[K] extends { requiredOnCreate: true }
      ? T[K]["schema"]
      : ReturnType<typeof Type.Optional<T[K]["schema"]>>;
  };

/** A setting's value in the domain: as the admin API's schema has it, a time as epoch ms. */
export type SettingValue<S extends Setting> = S extends TimeSetting
  ? number | null
  : Static<S["schema"]>;

/** A table's values, each optional: the changes a write applies. */
export type SettingValues<T extends SettingsTable> = { [K in keyof T]?: SettingValue<T[K]> };

/** The names of a table's settings required on create. */
export type RequiredOnCreate<T extends SettingsTable> = {
  [K in keyof T]: T[K] extends { requiredOnCreate: true } ? K : never;
}[keyof T];

/** A table's settings as a list of [name, setting], in the table's order. */
export const settingsOf = <T extends SettingsTable>(table: T) =>
  Object.entries(table) as Array<[keyof T & string, Setting]>;

/** The setting's CLI option on a command that creates the record or updates it, if any. */
export function cliOptionOf(setting: Setting, command: "create" | "update"): CliOption | undefined {
  const { cli } = setting;
  if (cli === undefined) return undefined;
  return "create" in cli ? cli[command] : cli;
}

/** Every CLI option a table's settings have, on any command. */
export const cliOptionsOf = (table: SettingsTable): CliOption[] =>
  Object.values(table).flatMap(({ cli }) =>
    cli === undefined ? [] : "create" in cli ? [cli.create, cli.update] : [cli],
  );
