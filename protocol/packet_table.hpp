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
    };

    PacketTable(std::initializer_list<Entry> entries) {
        for (const auto& e : entries)
            handlers_.emplace(e.name, e.handler);
    }

    const Handler* find(std::string_view name) const {
        auto it = handlers_.find(name);
        return it == handlers_.end() ? nullptr : &it->second;
    }

    template <typename F> void for_each_name(F&& f) const {
        for (const auto& [name, handler] : handlers_)
            f(name);
    }

  private:
    std::unordered_map<std::string_view, Handler> handlers_;
};

} // namespace tpagent::protocol
