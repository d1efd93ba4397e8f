import CustodyPolicy
import Testing

@Suite("JSON writer")
struct JSONWriterTests {
    @Test("writes compact JSON that reads back the same")
    func roundTrip() throws {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("text")
        writer.value("quote \" backslash \\ newline \n tab \t bell \u{7} é")
        writer.key("numbers")
        writer.beginArray()
        writer.value(0)
        writer.value(-42)
        writer.endArray()
        writer.key("flags")
        writer.beginObject()
        writer.key("yes")
        writer.value(true)
        writer.key("none")
        writer.null()
        writer.endObject()
        writer.key("empty")
        writer.beginArray()
        writer.endArray()
        writer.endObject()
        #expect(
            writer.string
                == #"{"text":"quote \" backslash \\ newline \n tab \t bell \u0007 é","numbers":[0,-42],"flags":{"yes":true,"none":null},"empty":[]}"#
        )

        let document = try JSONDocument(parsing: writer.bytes)
        #expect(document.root["text"]?.string == "quote \" backslash \\ newline \n tab \t bell \u{7} é")
        #expect(document.root["flags"]?["none"]?.isNull == true)
    }

    @Test("indents pretty output two spaces per level")
    func pretty() {
        var writer = JSONWriter(pretty: true)
        writer.beginObject()
        writer.key("a")
        writer.beginArray()
        writer.value(1)
        writer.endArray()
        writer.key("b")
        writer.beginObject()
        writer.endObject()
        writer.endObject()
        #expect(writer.string == "{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}")
    }

    @Test("appends cached members after other members with a comma")
    func rawMembers() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("a")
        writer.value(1)
        writer.rawMembers(Array(#""b":2,"c":[]"#.utf8))
        writer.endObject()
        #expect(writer.string == #"{"a":1,"b":2,"c":[]}"#)
    }
}
