// The dispatch table type: packet name -> handler. The one table of tpagent's packets is built in
// agent/packet_handlers.cpp; a name that is not in it gets the empty reply.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tpagent::protocol {

template <typename Context> class PacketTable {
  public:
    using Handler = std::function<std::string(Context&, std::string_view args)>;

    struct Entry {
        std::string_view name;
        Handler handler;
        // The handler changes the program in ways that need every thread stopped (code
        // patches, injected calls, detaching): in non-stop mode the others are paused for it.
        bool stops_all = false;
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
