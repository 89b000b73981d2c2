package paperboy.client

import java.math.BigDecimal

/**
 * A strict JSON reader and writer (RFC 8259), so that the library needs nothing but the JDK (Android's
 * `org.json` is lenient: it takes single quotes, unquoted keys and a number where a string is asked for,
 * and the plain JVM has no JSON at all).
 *
 * Read values are: [Map] (a [LinkedHashMap] in the document's order), [List], [String], [BigDecimal]
 * (every number, exactly), [Boolean] and `null`. A duplicate key, trailing commas, comments, NaN,
 * leading zeros and anything after the value are refused with a [JsonException].
 */
object Json {
    /** The deepest nesting read: a payload or manifest is a few levels deep. */
    private const val MAXIMUM_DEPTH = 64

    @JvmStatic
    @Throws(JsonException::class)
    fun parse(text: String): Any? {
        val reader = Reader(text)
        reader.skipSpace()
        val value = reader.value(0)
        reader.skipSpace()
        if (!reader.atEnd()) throw JsonException("unexpected text after the value at offset ${reader.position}")
        return value
    }

    /** Compact JSON: object keys in the map's order, strings escaped, whole doubles without a fraction. */
    @JvmStatic
    fun write(value: Any?): String {
        val out = StringBuilder()
        write(value, out)
        return out.toString()
    }

    /**
     * Whether two read (or built) values are the same JSON: numbers by value (`12` equals `12.0`), objects
     * whatever their key order.
     */
    @JvmStatic
    fun equivalent(a: Any?, b: Any?): Boolean {
        if (a == null || b == null) return a == null && b == null
        if (a is Number && b is Number) return decimal(a).compareTo(decimal(b)) == 0
        if (a is Map<*, *> && b is Map<*, *>) {
            if (a.keys != b.keys) return false
            return a.keys.all { equivalent(a[it], b[it]) }
        }
        if (a is List<*> && b is List<*>) {
            if (a.size != b.size) return false
            return a.indices.all { equivalent(a[it], b[it]) }
        }
        return a == b
    }

    internal fun decimal(number: Number): BigDecimal = when (number) {
        is BigDecimal -> number
        is Int, is Long, is Short, is Byte -> BigDecimal.valueOf(number.toLong())
        else -> BigDecimal(number.toDouble().toString())
    }

    private fun write(value: Any?, out: StringBuilder) {
        when (value) {
            null -> out.append("null")
            is String -> string(value, out)
            is Boolean -> out.append(if (value) "true" else "false")
            is Int, is Long, is Short, is Byte -> out.append(value.toString())
            is BigDecimal -> out.append(value.toString())
            is Double, is Float -> {
                val number = (value as Number).toDouble()
                require(!number.isNaN() && !number.isInfinite()) { "JSON has no NaN or infinity" }
                if (number == Math.rint(number) && Math.abs(number) < 1e15) out.append(number.toLong().toString())
                else out.append(number.toString())
            }
            is Map<*, *> -> {
                out.append('{')
                var first = true
                for ((key, item) in value) {
                    if (!first) out.append(',')
                    first = false
                    string(key as String, out)
                    out.append(':')
                    write(item, out)
                }
                out.append('}')
            }
            is List<*> -> {
                out.append('[')
                value.forEachIndexed { index, item ->
                    if (index > 0) out.append(',')
                    write(item, out)
                }
                out.append(']')
            }
            else -> throw IllegalArgumentException("not a JSON value: ${value.javaClass.name}")
        }
    }

    private fun string(text: String, out: StringBuilder) {
        out.append('"')
        for (char in text) {
            when (char) {
                '"' -> out.append("\\\"")
                '\\' -> out.append("\\\\")
                '\n' -> out.append("\\n")
                '\r' -> out.append("\\r")
                '\t' -> out.append("\\t")
                else -> if (char < ' ') out.append(String.format("\\u%04x", char - '\u0000')) else out.append(char)
            }
        }
        out.append('"')
    }

    private class Reader(val text: String) {
        var position = 0

        fun atEnd() = position >= text.length

        fun skipSpace() {
            while (position < text.length) {
                val char = text[position]
                if (char == ' ' || char == '\t' || char == '\n' || char == '\r') position++ else return
            }
        }

        fun fail(what: String): Nothing = throw JsonException("$what at offset $position")

        fun value(depth: Int): Any? {
            if (depth > MAXIMUM_DEPTH) fail("nested too deep")
            if (atEnd()) fail("a value expected")
            return when (text[position]) {
                '{' -> obj(depth)
                '[' -> array(depth)
                '"' -> string()
                't' -> literal("true", true)
                'f' -> literal("false", false)
                'n' -> literal("null", null)
                else -> number()
            }
        }

        fun literal(word: String, value: Any?): Any? {
            if (!text.startsWith(word, position)) fail("an unknown word")
            position += word.length
            return value
        }

        fun obj(depth: Int): Map<String, Any?> {
            position++
            val result = LinkedHashMap<String, Any?>()
            skipSpace()
            if (!atEnd() && text[position] == '}') {
                position++
                return result
            }
            while (true) {
                skipSpace()
                if (atEnd() || text[position] != '"') fail("a key expected")
                val key = string()
                if (result.containsKey(key)) fail("the key '$key' appears twice")
                skipSpace()
                if (atEnd() || text[position] != ':') fail("':' expected")
                position++
                skipSpace()
                result[key] = value(depth + 1)
                skipSpace()
                if (atEnd()) fail("'}' expected")
                when (text[position]) {
                    ',' -> position++
                    '}' -> {
                        position++
                        return result
                    }
                    else -> fail("',' or '}' expected")
                }
            }
        }

        fun array(depth: Int): List<Any?> {
            position++
            val result = ArrayList<Any?>()
            skipSpace()
            if (!atEnd() && text[position] == ']') {
                position++
                return result
            }
            while (true) {
                skipSpace()
                result.add(value(depth + 1))
                skipSpace()
                if (atEnd()) fail("']' expected")
                when (text[position]) {
                    ',' -> position++
                    ']' -> {
                        position++
                        return result
                    }
                    else -> fail("',' or ']' expected")
                }
            }
        }

        fun string(): String {
            position++
            val out = StringBuilder()
            while (true) {
                if (atEnd()) fail("an unterminated string")
                val char = text[position++]
                when {
                    char == '"' -> return out.toString()
                    char == '\\' -> {
                        if (atEnd()) fail("an unterminated escape")
                        when (val escaped = text[position++]) {
                            '"', '\\', '/' -> out.append(escaped)
                            'b' -> out.append('\b')
                            'f' -> out.append('\u000C')
                            'n' -> out.append('\n')
                            'r' -> out.append('\r')
                            't' -> out.append('\t')
                            'u' -> {
                                if (position + 4 > text.length) fail("a short \\u escape")
                                var code = 0
                                for (index in 0 until 4) {
                                    val digit = Character.digit(text[position + index], 16)
                                    if (digit < 0) fail("a bad \\u escape")
                                    code = code * 16 + digit
                                }
                                position += 4
                                out.append(code.toChar())
                            }
                            else -> fail("an unknown escape")
                        }
                    }
                    char < ' ' -> fail("a control character in a string")
                    else -> out.append(char)
                }
            }
        }

        fun number(): BigDecimal {
            val start = position
            if (text[position] == '-') position++
            if (atEnd()) fail("a number expected")
            if (text[position] == '0') {
                position++
            } else if (text[position] in '1'..'9') {
                while (!atEnd() && text[position] in '0'..'9') position++
            } else {
                fail("a value expected")
            }
            if (!atEnd() && text[position] == '.') {
                position++
                val digits = position
                while (!atEnd() && text[position] in '0'..'9') position++
                if (position == digits) fail("digits expected after '.'")
            }
            if (!atEnd() && (text[position] == 'e' || text[position] == 'E')) {
                position++
                if (!atEnd() && (text[position] == '+' || text[position] == '-')) position++
                val digits = position
                while (!atEnd() && text[position] in '0'..'9') position++
                if (position == digits) fail("digits expected in the exponent")
            }
            return try {
                BigDecimal(text.substring(start, position))
            } catch (error: NumberFormatException) {
                fail("a number out of range")
            }
        }
    }
}

/** Text that is not JSON, or not the JSON expected, with where. */
class JsonException(message: String) : Exception(message)

/** Reading a parsed JSON object's fields by name, each refusal naming the field's path. */
internal class JsonFields(private val values: Map<String, Any?>, private val path: String) {
    fun name(key: String) = if (path.length == 0) key else "$path.$key"

    fun has(key: String) = values.containsKey(key) && values[key] != null

    fun raw(key: String): Any? = values[key]

    fun string(key: String, refuse: (String, String) -> Nothing): String {
        if (!has(key)) refuse(name(key), "is missing")
        return values[key] as? String ?: refuse(name(key), "is not text")
    }

    fun optionalString(key: String, refuse: (String, String) -> Nothing): String? =
        if (has(key)) string(key, refuse) else null

    fun long(key: String, refuse: (String, String) -> Nothing): Long {
        if (!has(key)) refuse(name(key), "is missing")
        val number = values[key] as? BigDecimal ?: refuse(name(key), "is not a number")
        return try {
            number.longValueExact()
        } catch (error: ArithmeticException) {
            refuse(name(key), "is not a whole number")
        }
    }

    fun obj(key: String, refuse: (String, String) -> Nothing): Map<String, Any?> {
        if (!has(key)) refuse(name(key), "is missing")
        @Suppress("UNCHECKED_CAST")
        return values[key] as? Map<String, Any?> ?: refuse(name(key), "is not an object")
    }

    fun list(key: String, refuse: (String, String) -> Nothing): List<Any?> {
        if (!has(key)) refuse(name(key), "is missing")
        return values[key] as? List<Any?> ?: refuse(name(key), "is not a list")
    }
}
