import {
  type CliOption,
  cliOptionOf,
  type RequiredOnCreate,
  type Setting,
  type SettingsTable,
  settingsOf,
  type SettingValue,
  type SettingValues,
} from "../../contracts/settings.js";
import {
  choiceOption,
  expiryOption,
  integerOption,
  listOption,
  type Options,
  stringOption,
  UsageError,
} from "../args.js";
import { limitOption } from "./shared.js";

// The options that set a table's settings (contracts/settings.ts): their help lines and the
// values they give, from each setting's kind.

type Command = "create" | "update";

/** `--expires-at <iso>|never`: the option, its value and the word for null. */
export const optionSpec = (o: CliOption) =>
  `--${o.option} ${o.value}${o.orNull === undefined ? "" : `|${o.orNull}`}`;

/** The option's help line: its spec and what it does. */
export const optionHelp = (o: CliOption) => [optionSpec(o), o.help] as const;

/** The option's value as the domain takes the setting; undefined when it is not given. */
export function optionValue<S extends Setting>(
  options: Options,
  setting: S,
  o: CliOption,
): SettingValue<S> | undefined;
export function optionValue(options: Options, setting: Setting, o: CliOption): unknown {
  switch (setting.kind) {
    case "choice":
      return choiceOption(options, o.option, setting.values);
    case "time":
      return expiryOption(options, o.orNull ?? false, o.option);
    case "count":
      return o.orNull === undefined
        ? integerOption(options, o.option)
        : limitOption(options, o.option, o.orNull);
    case "text":
      return stringOption(options, o.option);
    case "list":
      return listOption(options, o.option);
  }
}

/** The option's value, which the command needs: a usage error when it is not given. */
export function requiredValue<S extends Setting>(
  options: Options,
  setting: S,
  o: CliOption,
): SettingValue<S> {
  const value = optionValue(options, setting, o);
  if (value === undefined) {
    const alternatives = o.orNull === undefined ? "" : ` (a number or ${o.orNull})`;
    throw new UsageError(`--${o.option} is required${alternatives}`);
  }
  return value;
}

/** The settings the command's options give (on create, those required on create must be). */
export function settingValues<T extends SettingsTable>(
  table: T,
  options: Options,
  command: "create",
): SettingValues<T> & Required<Pick<SettingValues<T>, RequiredOnCreate<T>>>;
export function settingValues<T extends SettingsTable>(
  table: T,
  options: Options,
  command: "update",
): SettingValues<T>;
export function settingValues<T extends SettingsTable>(
  table: T,
  options: Options,
  command: Command,
): SettingValues<T> {
  return Object.fromEntries(
    settingsOf(table).flatMap(([name, setting]) => {
      const o = cliOptionOf(setting, command);
      if (o === undefined) return [];
      const required = command === "create" && setting.requiredOnCreate === true;
      const value = required
        ? requiredValue(options, setting, o)
        : optionValue(options, setting, o);
      return [[name, value]];
    }),
  ) as SettingValues<T>;
}

/**
 * The command's setting options as its help lists them: on create, those required on create
 * apart, and a choice's default named; then the options create and update read differently,
 * then the others, each in the table's order.
 */
export function settingsHelp(table: SettingsTable, command: Command) {
  const entries = settingsOf(table).flatMap(([, setting]) => {
    const option = cliOptionOf(setting, command);
    if (option === undefined) return [];
    const byDefault =
      command === "create" && setting.kind === "choice" && setting.default !== undefined
        ? ` (default ${setting.default})`
        : "";
    return [{ setting, o: { ...option, help: `${option.help}${byDefault}` } }];
  });
  const isRequired = ({ setting }: (typeof entries)[number]) =>
    command === "create" && setting.requiredOnCreate === true;
  const differs = ({ setting }: (typeof entries)[number]) =>
    setting.requiredOnCreate === true || (setting.cli !== undefined && "create" in setting.cli);
  const optional = entries.filter((e) => !isRequired(e));
  return {
    required: entries
      .filter(isRequired)
      .map(({ o }) => [optionSpec(o), `${o.help} (required)`] as const),
    optional: [...optional.filter(differs), ...optional.filter((e) => !differs(e))].map(({ o }) =>
      optionHelp(o),
    ),
    /** Every option in the table's order, for a command that needs one of them. */
    names: entries.map(({ o }) => `--${o.option}`),
  } as const;
}
