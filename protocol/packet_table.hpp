// The dispatch table type: packet name -> handler, and for some entries the schema their
// arguments are parsed by before the handler runs (packet_args.hpp). tpagent's tables are built
// in server/: every packet's in packet_handlers.cpp, and the one looked up first while the
// program gdb is shown has ended (exited_program_packets.cpp). The session answers a name in
// neither with the empty reply.
#pragma once
#include "protocol/packet_args.hpp"
#include "protocol/replies.hpp"
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace tpagent::protocol {

// An entry's argument schema (see PacketArgs), and its reply to arguments that do not fit it
// (none: the parse error's code, as "Enn").
struct ArgumentSchema {
    std::string_view letters;
    std::string (*bad_reply)(const Error&) = nullptr;
};

template <typename Context> class PacketTable {
  public:
    using Handler = std::function<std::string(Context&, std::string_view args)>;
    // The handler of an entry with an argument schema: it runs with the arguments parsed.
    using ArgsHandler = std::function<std::string(Context&, const PacketArgs& args)>;

    struct Entry {
        Entry(std::string_view name, Handler handler, bool stops_all = false)
            : name(name), handler(std::move(handler)), stops_all(stops_all) {}
        Entry(std::string_view name, ArgumentSchema schema, ArgsHandler handler,
              bool stops_all = false)
            : name(name), handler(parsing(schema, std::move(handler))), stops_all(stops_all) {}

        std::string_view name;
        Handler handler;
        // The handler changes the program in ways that need every thread stopped (code
        // patches, injected calls, detaching): in non-stop mode the others are paused for it.
        bool stops_all = false;

      private:
        static Handler parsing(ArgumentSchema schema, ArgsHandler handler) {
            return [schema, handler = std::move(handler)](Context& context, std::string_view args) {
                auto parsed = PacketArgs::parse(schema.letters, args);
                if (!parsed)
                    return schema.bad_reply ? schema.bad_reply(parsed.error())
                                            : reply_error(parsed.error());
                return handler(context, *parsed);
            };
        }
    };

    PacketTable(std::initializer_list<Entry> entries) {
        for (const auto& e : entries)
            entries_.emplace(e.name, e);
    }

    const Handler* find(std::string_view name) const {
        auto it = entries_.find(name);
        return it == entries_.end() ? nullptr : &it->second.handler;
    }
    bool stops_all(std::string_view name) const {
        auto it = entries_.find(name);
        return it != entries_.end() && it->second.stops_all;
    }

    template <typename F> void for_each_name(F&& f) const {
        for (const auto& [name, entry] : entries_)
            f(name);
    }

  private:
    std::unordered_map<std::string_view, Entry> entries_;
};

} // namespace tpagent::protocol
