import { inspect } from './console-format.guest';
import { createApp, describeProps, GuestInvocation, isObject, toJson } from './component-instance.guest';
import { hasOwn, jsonStringify, objectKeys } from './guest-intrinsics.guest';
import { utf8Length } from './web-encoding.guest';

type Dict = Record<string, unknown>;

/** Options one call may return; a UI cannot show more, and the host must not carry more. */
export const MAX_PROP_OPTIONS = 10_000;
/** UTF-8 bytes of one options answer as JSON (options and context). */
export const MAX_PROP_OPTIONS_BYTES = 512 * 1024;
/** Props one `additionalProps()` call may add. */
export const MAX_ADDITIONAL_PROPS = 200;
/** UTF-8 bytes of the props `additionalProps()` returns, described as JSON. */
export const MAX_ADDITIONAL_PROPS_BYTES = 256 * 1024;

/** The name of the error thrown when options are asked of a prop the component does not have (the host answers 404). */
export const UNKNOWN_PROP_ERROR = 'UnknownPropError';

function unknownProp(prop: string): Error {
  const error = new Error(`the component has no prop "${prop}"`);
  error.name = UNKNOWN_PROP_ERROR;
  return error;
}

/**
 * The props `additionalProps(previousPropDefs)` returns for the configured props in `this`, or an
 * empty object when the component has no such method. `previousPropDefs` is the static set.
 */
async function dynamicProps(definition: Dict, instance: Dict): Promise<Dict> {
  const method = definition.additionalProps;
  if (typeof method !== 'function') return {};
  const result: unknown = await method.call(instance, isObject(definition.props) ? definition.props : {});
  if (result === undefined || result === null) return {};
  if (!isObject(result) || Array.isArray(result)) {
    throw new TypeError(`additionalProps() must return an object of props, got ${Array.isArray(result) ? 'an array' : inspect(result, 0)}`);
  }
  return result;
}

/**
 * Runs `additionalProps()` and describes its props as `describe` does the static ones (JSON).
 * Bounded in count and bytes: the host validates and shows every one of them.
 */
export async function additionalPropsJson(definition: Dict, instance: Dict): Promise<string> {
  const props = describeProps(await dynamicProps(definition, instance));
  if (props.length > MAX_ADDITIONAL_PROPS) {
    throw new RangeError(`additionalProps() returned ${props.length} props, more than the ${MAX_ADDITIONAL_PROPS} allowed`);
  }
  const json = jsonStringify(props);
  const bytes = utf8Length(json);
  if (bytes > MAX_ADDITIONAL_PROPS_BYTES) {
    throw new RangeError(`additionalProps() returned ${bytes} bytes of props as JSON, more than the ${MAX_ADDITIONAL_PROPS_BYTES} allowed`);
  }
  return json;
}

/**
 * The object an app's propDefinition options run on: the component's own app prop when the app
 * is one of its props (the same object, else one with its slug), so `this.$auth` is the
 * connected account; else the app alone with an empty `$auth`.
 */
function appThis(app: Dict, definition: Dict, instance: Dict): Dict {
  const statics = isObject(definition.props) ? definition.props : {};
  const names = objectKeys(statics);
  for (const name of names) {
    if (statics[name] === app && isObject(instance[name])) return instance[name] as Dict;
  }
  // A copy of the app object (`{ ...app }` as a prop) is still that app: matched by its slug.
  for (const name of names) {
    const prop = statics[name];
    if (isObject(prop) && prop.type === 'app' && typeof app.app === 'string' && prop.app === app.app && isObject(instance[name])) return instance[name] as Dict;
  }
  return createApp(app, {});
}

/** One option as the API returns it: a string, number or boolean, or `{label, value}`. */
function optionOf(item: unknown, index: number, prop: string): unknown {
  if (typeof item === 'string' || typeof item === 'boolean' || (typeof item === 'number' && Number.isFinite(item))) return item;
  if (isObject(item) && !Array.isArray(item) && hasOwn(item, 'value')) {
    const value = item.value;
    const label = typeof item.label === 'string' ? item.label : String(value);
    return { label, value };
  }
  throw new TypeError(`the options of prop "${prop}": option ${index} must be a string, a number, a boolean or {label, value}, got ${inspect(item, 1)}`);
}

/** `[...]` or `{options, context}` as `{options, context}` JSON, within the count and byte caps. */
function normalisedOptions(value: unknown, prop: string): string {
  let list: unknown[];
  let context: unknown = null;
  if (Array.isArray(value)) list = value;
  else if (isObject(value) && Array.isArray(value.options)) {
    list = value.options;
    context = value.context === undefined ? null : value.context;
  } else {
    throw new TypeError(`the options of prop "${prop}" must be an array or {options, context}, got ${inspect(value, 1)}`);
  }
  if (list.length > MAX_PROP_OPTIONS) {
    throw new RangeError(`the options of prop "${prop}" are ${list.length} items, more than the ${MAX_PROP_OPTIONS} one call may return; paginate with {options, context}`);
  }
  const json = `{"options":${toJson(list.map((item, i) => optionOf(item, i, prop)), `the options of prop "${prop}"`)},"context":${toJson(context, `the context of prop "${prop}"`)}}`;
  const bytes = utf8Length(json);
  if (bytes > MAX_PROP_OPTIONS_BYTES) {
    throw new RangeError(`the options of prop "${prop}" are ${bytes} bytes as JSON, more than the ${MAX_PROP_OPTIONS_BYTES} one call may return; paginate with {options, context}`);
  }
  return json;
}

/**
 * The options of one prop (spec 2.5 "Async options", "Prop definitions"), as `{options, context}`
 * JSON. The prop is a static one or one `additionalProps()` adds for the configured props. With
 * `propDefinition: [app, name, inputValues]` the app's definition is merged under the prop's own
 * fields; `inputValues` (an object, or a function of the props configured so far) is spread into
 * the options method's argument. The app's options run with `this` = the app object, the
 * component's own with `this` = the instance, as `run` sees it. `query` is passed only with
 * `useQuery`.
 */
export async function propOptionsJson(definition: Dict, instance: Dict, invocation: GuestInvocation): Promise<string> {
  const request = invocation.propOptions;
  if (!request) throw new TypeError('no prop was named');
  const name = request.prop;
  const statics = isObject(definition.props) ? definition.props : {};
  let prop: unknown = hasOwn(statics, name) ? statics[name] : undefined;
  if (prop === undefined) {
    const added = await dynamicProps(definition, instance);
    if (hasOwn(added, name)) prop = added[name];
  }
  if (!isObject(prop)) throw unknownProp(name);
  let options: unknown = prop.options;
  let useQuery = prop.useQuery === true;
  let self: Dict = instance;
  let inputValues: unknown = {};
  if (prop.propDefinition !== undefined) {
    const ref: unknown[] = Array.isArray(prop.propDefinition) ? prop.propDefinition : [];
    const app = ref[0];
    const key = ref[1];
    const shared = isObject(app) && typeof key === 'string' && isObject(app.propDefinitions) ? app.propDefinitions[key] : undefined;
    if (!isObject(app) || typeof key !== 'string' || !isObject(shared)) {
      throw new TypeError(`props.${name}.propDefinition must be [app, propDefinitionName, inputValues?] naming a propDefinition of the app`);
    }
    if (!hasOwn(prop, 'options')) {
      options = shared.options;
      self = appThis(app, definition, instance);
    }
    if (!hasOwn(prop, 'useQuery')) useQuery = shared.useQuery === true;
    const input = ref[2];
    inputValues = typeof input === 'function' ? await input.call(instance, { ...invocation.props }) : input;
    if (inputValues === undefined || inputValues === null) inputValues = {};
    if (!isObject(inputValues) || Array.isArray(inputValues)) {
      throw new TypeError(`props.${name}.propDefinition: inputValues must be an object or a function returning one, got ${inspect(inputValues, 0)}`);
    }
  }
  if (typeof options !== 'function') {
    if (Array.isArray(options)) return normalisedOptions(options, name);
    throw new TypeError(`prop "${name}" has no options`);
  }
  const argument: Dict = { page: request.page, prevContext: request.prevContext };
  if (useQuery) argument.query = request.query ?? '';
  for (const k of objectKeys(inputValues as Dict)) argument[k] = (inputValues as Dict)[k];
  return normalisedOptions(await options.call(self, argument), name);
}
