// SPDX-License-Identifier: GPL-2.0
/*
 * The spec-key table (spec_keys.h) and what every engine does with a row:
 * refuse keys it does not take, check a value's type and range, store it
 * or the default in the engine's spec, write it back, print the table.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcplab/spec_keys.h>

#define SPEC_KEY_ROW(key, model, host, ...) \
	[SPEC_KEY_##key] = { .name = #key, __VA_ARGS__ },
const struct spec_key spec_keys[NR_SPEC_KEYS] = { SPEC_KEYS(SPEC_KEY_ROW) };
#undef SPEC_KEY_ROW

static const char *const type_names[] = {
	[KEY_INT] = "int",	 [KEY_NUMBER] = "number", [KEY_BOOL] = "bool",
	[KEY_CHOICE] = "choice", [KEY_STRING] = "string", [KEY_LIST] = "list",
	[KEY_OBJECT] = "object",
};

static const unsigned int engine_bits[] = { ENGINE_NATIVE, ENGINE_SIM,
					    ENGINE_HOST };

static int fail(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, SPEC_ERRLEN, fmt, ap);
	va_end(ap);
	return -1;
}

/* The name of @engine (ENGINE_NATIVE...). */
static const char *engine_name(unsigned int engine)
{
	if (engine == ENGINE_HOST)
		return "host";
	return engine == ENGINE_SIM ? "sim" : "native";
}

static const struct spec_key *find_key(const char *name)
{
	for (int i = 0; i < NR_SPEC_KEYS; i++)
		if (!strcmp(spec_keys[i].name, name))
			return &spec_keys[i];
	return NULL;
}

/* The index of @str in @choices ("a, b, c"), or -1. */
static int choice_index(const char *choices, const char *str)
{
	size_t len = strlen(str);
	int i = 0;

	for (const char *c = choices; *c; i++) {
		size_t n = strcspn(c, ",");

		if (n == len && !strncmp(c, str, len))
			return i;
		c += n;
		c += strspn(c, ", ");
	}
	return -1;
}

/* Choice @index of @choices into @buf. */
static const char *choice_name(const char *choices, int index, char *buf,
			       size_t len)
{
	const char *c = choices;

	for (int i = 0; i < index && *c; i++) {
		c += strcspn(c, ",");
		c += strspn(c, ", ");
	}
	snprintf(buf, len, "%.*s", (int)strcspn(c, ","), c);
	return buf;
}

/* Refuse a key no row names, or whose row @engine does not take. */
int spec_keys_check(const cJSON *o, unsigned int engine, char *err)
{
	const char *name = engine_name(engine);
	char taken[SPEC_ERRLEN] = "";
	const cJSON *item;

	for (int i = 0; i < NR_SPEC_KEYS; i++)
		if (spec_keys[i].engines & engine)
			snprintf(taken + strlen(taken),
				 sizeof(taken) - strlen(taken), "%s%s",
				 *taken ? ", " : "", spec_keys[i].name);
	cJSON_ArrayForEach (item, o) {
		const struct spec_key *key = find_key(item->string);

		if (key && ((key->engines & engine) || cJSON_IsNull(item)))
			continue;
		if (key && engine == ENGINE_HOST)
			return fail(
				err,
				"%s is a model knob; the host engine runs this kernel's own PCP (use --engine native or sim)",
				item->string);
		if (key)
			return fail(
				err,
				"%s is not a key of the %s engine; allowed: %.360s",
				item->string, name, taken);
		return fail(
			err,
			"unknown spec key '%.40s'; allowed for the %s engine: %.360s",
			item->string, name, taken);
	}
	return 0;
}

/* Whether @text holds the escape \u0000 (a NUL) in a string. */
static bool has_escaped_nul(const char *text)
{
	for (const char *c = text; *c; c++) {
		if (*c != '\\')
			continue;
		if (c[1] == 'u' && !strncmp(c + 2, "0000", 4))
			return true;
		if (c[1])
			c++; /* the escaped one: after \\ a u0000 is text */
	}
	return false;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The first key given twice in an object of @o, at any depth, into @buf,
 * control characters shown as '?' (the message is one line); NULL if none.
 * The names are sorted, so a request of many keys is no quadratic walk.
 */
static const char *repeated_key(const cJSON *o, char *buf, size_t len)
{
	const char *found = NULL, **names;
	const cJSON *item;
	size_t n = 0;

	cJSON_ArrayForEach (item, o) {
		if (repeated_key(item, buf, len))
			return buf;
		n++;
	}
	if (!cJSON_IsObject(o) || n < 2)
		return NULL;
	names = malloc(n * sizeof(*names));
	if (!names)
		return NULL;
	n = 0;
	cJSON_ArrayForEach (item, o)
		names[n++] = item->string;
	qsort(names, n, sizeof(*names), compare_names);
	for (size_t i = 1; i < n && !found; i++)
		if (!strcmp(names[i - 1], names[i]))
			found = names[i];
	if (found) {
		snprintf(buf, len, "%.40s", found);
		for (char *c = buf; *c; c++)
			if ((unsigned char)*c < ' ' || *c == 0x7f)
				*c = '?';
	}
	free(names);
	return found ? buf : NULL;
}

int spec_json_check(const cJSON *o, const char *text, char *err)
{
	char key[48];

	if (repeated_key(o, key, sizeof(key)))
		return fail(
			err,
			"the request gives key '%s' twice; give each key once",
			key);
	if (has_escaped_nul(text))
		return fail(
			err,
			"a string of the request holds a NUL (\\u0000); give strings without one");
	return 0;
}

const cJSON *spec_key_value(const cJSON *o, enum spec_key_id key)
{
	const cJSON *v =
		cJSON_GetObjectItemCaseSensitive(o, spec_keys[key].name);

	return v && !cJSON_IsNull(v) ? v : NULL;
}

/* The range of @key up to @hi: "1..1024", "0 or 8..2147483647". */
static const char *bare_range(enum spec_key_id key, double hi, char *buf,
			      size_t len)
{
	const struct spec_key *k = &spec_keys[key];
	const char *zero = k->flags & KEY_OR_ZERO ? "0 or " : "";

	if (k->type == KEY_INT)
		snprintf(buf, len, "%s%.0f..%.0f", zero, k->lo, hi);
	else
		snprintf(buf, len, "%s%g..%g", zero, k->lo, hi);
	return buf;
}

const char *spec_key_range(enum spec_key_id key, double hi, char *buf,
			   size_t len)
{
	const char *knob = spec_keys[key].knob;
	char range[64];

	snprintf(buf, len, "%s%s %s", knob ? knob : "",
		 knob ? " takes" : "allowed",
		 bare_range(key, hi, range, sizeof(range)));
	return buf;
}

static bool in_range(const struct spec_key *k, double v, double hi)
{
	return (v >= k->lo && v <= hi) || ((k->flags & KEY_OR_ZERO) && !v);
}

/* Check integer @v of @key within lo..@hi; its value into @out. */
static int check_int(enum spec_key_id key, const cJSON *v, double hi,
		     long long *out, char *err)
{
	const char *name = spec_keys[key].name;
	char range[128];

	spec_key_range(key, hi, range, sizeof(range));
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
		return fail(err, "%s must be an integer; %s", name, range);
	if (!in_range(&spec_keys[key], v->valuedouble, hi))
		return fail(err, "%s %.0f is out of range; %s", name,
			    v->valuedouble, range);
	*out = (long long)v->valuedouble;
	return 0;
}

int spec_key_int(const cJSON *o, enum spec_key_id key, double hi,
		 long long *out, char *err)
{
	const cJSON *v = spec_key_value(o, key);

	return v ? check_int(key, v, hi, out, err) : 0;
}

/* Check the number, bool or choice @v of @key; its value into @out. */
static int check_value(enum spec_key_id key, const cJSON *v, double *out,
		       char *err)
{
	const struct spec_key *k = &spec_keys[key];
	char range[128];
	long long i;

	switch (k->type) {
	case KEY_INT:
		if (check_int(key, v, k->hi, &i, err))
			return -1;
		*out = (double)i;
		return 0;
	case KEY_NUMBER:
		spec_key_range(key, k->hi, range, sizeof(range));
		if (!cJSON_IsNumber(v))
			return fail(err, "%s must be a number; %s", k->name,
				    range);
		if (!in_range(k, v->valuedouble, k->hi))
			return fail(err, "%s %g is out of range; %s", k->name,
				    v->valuedouble, range);
		*out = v->valuedouble;
		return 0;
	case KEY_BOOL:
		if (!cJSON_IsBool(v))
			return fail(
				err,
				"%s must be true or false; allowed true, false",
				k->name);
		*out = cJSON_IsTrue(v);
		return 0;
	case KEY_CHOICE:
		if (!cJSON_IsString(v))
			return fail(err, "%s must be a string; allowed %s",
				    k->name, k->choices);
		*out = choice_index(k->choices, v->valuestring);
		if (*out < 0)
			return fail(err, "unknown %s '%.40s'; allowed %s",
				    k->name, v->valuestring, k->choices);
		return 0;
	default:
		return fail(err, "%s is parsed by its engine, not by its row",
			    k->name);
	}
}

/*
 * Store @value at @field, a member of @size bytes: a double (KEY_NUMBER),
 * a bool, an int or enum, or a 64-bit integer.
 */
static void store(const struct spec_key *k, void *field, size_t size,
		  double value)
{
	bool b = value != 0;
	int i = (int)value;
	long long ll = (long long)value;

	if (k->type == KEY_NUMBER)
		memcpy(field, &value, sizeof(value));
	else if (size == sizeof(b))
		memcpy(field, &b, sizeof(b));
	else if (size == sizeof(i))
		memcpy(field, &i, sizeof(i));
	else
		memcpy(field, &ll, sizeof(ll));
}

/* The value at @field, stored by store(). */
static double load(const struct spec_key *k, const void *field, size_t size)
{
	double d;
	bool b;
	int i;
	long long ll;

	if (k->type == KEY_NUMBER) {
		memcpy(&d, field, sizeof(d));
		return d;
	}
	if (size == sizeof(b)) {
		memcpy(&b, field, sizeof(b));
		return b;
	}
	if (size == sizeof(i)) {
		memcpy(&i, field, sizeof(i));
		return i;
	}
	memcpy(&ll, field, sizeof(ll));
	return (double)ll;
}

/* Check @key's value in @o and store it at @field (the default if absent). */
static int parse_key(const cJSON *o, enum spec_key_id key, void *field,
		     size_t size, char *err)
{
	const struct spec_key *k = &spec_keys[key];
	const cJSON *v = spec_key_value(o, key);
	double value = k->def;

	if (!v && (k->flags & KEY_COMPUTED))
		return 0;
	if (v && check_value(key, v, &value, err))
		return -1;
	store(k, field, size, value);
	return 0;
}

int spec_keys_parse(const cJSON *o, const struct spec_field *fields, void *spec,
		    char *err)
{
	for (int i = 0; i < NR_SPEC_KEYS; i++) {
		if (!fields[i].size || (spec_keys[i].flags & KEY_OWN_PARSE))
			continue;
		if (parse_key(o, i, (char *)spec + fields[i].offset,
			      fields[i].size, err))
			return -1;
	}
	return 0;
}

void spec_key_write(cJSON *o, enum spec_key_id key,
		    const struct spec_field *fields, const void *spec)
{
	const struct spec_key *k = &spec_keys[key];
	const struct spec_field *f = &fields[key];
	char name[32];
	double value;

	if (!f->size || (k->flags & KEY_INTERNAL))
		return;
	value = load(k, (const char *)spec + f->offset, f->size);
	switch (k->type) {
	case KEY_BOOL:
		cJSON_AddBoolToObject(o, k->name, value != 0);
		break;
	case KEY_CHOICE:
		cJSON_AddStringToObject(o, k->name,
					choice_name(k->choices, (int)value,
						    name, sizeof(name)));
		break;
	case KEY_INT:
		/* below the range: not set, the engine computes it */
		if (value < k->lo && !in_range(k, value, k->hi)) {
			cJSON_AddNullToObject(o, k->name);
			break;
		}
		/* fall through */
	default:
		cJSON_AddNumberToObject(o, k->name, value);
	}
}

/* The row's default as the spec would give it; null if computed. */
static cJSON *default_json(const struct spec_key *k)
{
	char name[32];

	if (k->def_text || (k->type == KEY_INT && !in_range(k, k->def, k->hi)))
		return cJSON_CreateNull();
	if (k->type == KEY_BOOL)
		return cJSON_CreateBool(k->def != 0);
	if (k->type == KEY_CHOICE)
		return cJSON_CreateString(choice_name(k->choices, (int)k->def,
						      name, sizeof(name)));
	return cJSON_CreateNumber(k->def);
}

/* What the row allows, in words. */
static const char *allowed_text(enum spec_key_id key, char *buf, size_t len)
{
	const struct spec_key *k = &spec_keys[key];

	if (k->allowed)
		return k->allowed;
	if (k->type == KEY_INT || k->type == KEY_NUMBER)
		return bare_range(key, k->hi, buf, len);
	if (k->type == KEY_BOOL)
		return "true, false";
	return k->choices ? k->choices : "";
}

/*
 * Add the bound @value of @k exactly: cJSON prints 15 digits, and seed's
 * 2^53 must not come out as 9007199254740990.
 */
static void add_bound(cJSON *row, const char *name, const struct spec_key *k,
		      double value)
{
	char text[32];

	snprintf(text, sizeof(text), k->type == KEY_INT ? "%.0f" : "%.17g",
		 value);
	cJSON_AddRawToObject(row, name, text);
}

static cJSON *row_json(enum spec_key_id key)
{
	const struct spec_key *k = &spec_keys[key];
	cJSON *row = cJSON_CreateObject();
	cJSON *engines, *choices;
	char buf[128];

	cJSON_AddStringToObject(row, "name", k->name);
	cJSON_AddStringToObject(row, "type", type_names[k->type]);
	if (k->type == KEY_INT || k->type == KEY_NUMBER) {
		add_bound(row, "min", k, k->lo);
		add_bound(row, "max", k, k->hi);
		cJSON_AddBoolToObject(row, "or_zero", k->flags & KEY_OR_ZERO);
	}
	if (k->choices) {
		choices = cJSON_AddArrayToObject(row, "choices");
		for (int i = 0; *choice_name(k->choices, i, buf, sizeof(buf));
		     i++)
			cJSON_AddItemToArray(choices, cJSON_CreateString(buf));
	}
	cJSON_AddStringToObject(row, "allowed",
				allowed_text(key, buf, sizeof(buf)));
	cJSON_AddItemToObject(row, "default", default_json(k));
	if (k->def_text)
		cJSON_AddStringToObject(row, "computed", k->def_text);
	else
		cJSON_AddNullToObject(row, "computed");
	if (k->knob)
		cJSON_AddStringToObject(row, "knob", k->knob);
	else
		cJSON_AddNullToObject(row, "knob");
	if (k->kernels) {
		choices = cJSON_AddArrayToObject(row, "kernels");
		for (int i = 0; *choice_name(k->kernels, i, buf, sizeof(buf));
		     i++)
			cJSON_AddItemToArray(choices, cJSON_CreateString(buf));
	} else {
		cJSON_AddNullToObject(row, "kernels");
	}
	engines = cJSON_AddArrayToObject(row, "engines");
	for (size_t i = 0; i < sizeof(engine_bits) / sizeof(*engine_bits); i++)
		if (k->engines & engine_bits[i])
			cJSON_AddItemToArray(
				engines, cJSON_CreateString(
						 engine_name(engine_bits[i])));
	cJSON_AddBoolToObject(row, "internal", k->flags & KEY_INTERNAL);
	cJSON_AddStringToObject(row, "help", k->help);
	return row;
}

cJSON *spec_keys_json(void)
{
	cJSON *rows = cJSON_CreateArray();

	for (int i = 0; i < NR_SPEC_KEYS; i++)
		cJSON_AddItemToArray(rows, row_json(i));
	return rows;
}

int spec_keys_main(void)
{
	cJSON *rows = spec_keys_json();
	char *text = cJSON_PrintUnformatted(rows);

	cJSON_Delete(rows);
	if (!text)
		return 1;
	puts(text);
	cJSON_free(text);
	return fflush(stdout) ? 1 : 0;
}

/* Whether generation @kernel takes key @id (its row's kernels, or all). */
bool spec_key_in_kernel(enum spec_key_id id, const char *kernel)
{
	return !spec_keys[id].kernels ||
	       choice_index(spec_keys[id].kernels, kernel) >= 0;
}
