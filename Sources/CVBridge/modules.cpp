// Finding the shim's modules (module_api.hpp), and cvb_module_load.
//
// By default (Package.swift's `leanModules`) the modules are linked into CVBridge and their
// tables are taken from the linker. In the lean layout (CVB_LEAN_MODULES, the shipped binary)
// each is loaded (dlopen) on the first call that needs it, looked for beside the binary holding
// this code (the program, or the shared library CVBridge was linked into), then in ../lib/cvcam
// from there: an install puts them in PREFIX/lib/cvcam beside PREFIX/bin, and
// `Tools/install --build-only` leaves them beside the binary it builds.
#include "bridge_internal.hpp"
#include "module_api.hpp"

#include <dlfcn.h>
#include <link.h>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unistd.h>

namespace {

/// The folder of the file this code was loaded from, symlinks resolved; empty when unknown.
std::string own_folder() {
    Dl_info info;
    struct link_map *map = nullptr;
    std::string file;
    if (dladdr1((void *)&own_folder, &info, (void **)&map, RTLD_DL_LINKMAP) != 0 && map && map->l_name &&
        map->l_name[0] != '\0')
        file = map->l_name;  // a shared library
    else
        file = "/proc/self/exe";  // the program itself (the main map has no name)
    char resolved[PATH_MAX];
    if (!realpath(file.c_str(), resolved)) return "";
    std::string path = resolved;
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? "" : path.substr(0, slash);
}

template <typename Table> struct Module {
    const char *file;   // the shared object's name
    const char *entry;  // its one exported symbol: const Table *(int abi)
    const char *holds;  // what it holds, for messages
    const Table *(*linked)(int abi);  // that symbol when the module is linked in, else NULL
    std::once_flag once;
    const Table *table = nullptr;
    std::string failure;
};

#ifdef CVB_LEAN_MODULES
#define CVB_LINKED(entry) nullptr
#else
#define CVB_LINKED(entry) &entry
#endif

Module<cvb_video_table> video{"libCVBridgeVideo.so", "cvb_video_module",
                              "OpenCV videoio and FFmpeg: video files, streams, movies",
                              CVB_LINKED(cvb_video_module)};
Module<cvb_objdetect_table> objdetect{"libCVBridgeObjdetect.so", "cvb_objdetect_module",
                                      "OpenCV objdetect and dnn: faces, QR location",
                                      CVB_LINKED(cvb_objdetect_module)};
Module<cvb_imgcodecs_table> imgcodecs{"libCVBridgeImgcodecs.so", "cvb_imgcodecs_module",
                                      "OpenCV imgcodecs: image formats beyond JPEG and PNG",
                                      CVB_LINKED(cvb_imgcodecs_module)};

template <typename Table> void load(Module<Table> &m) {
    if (m.linked) {
        // Linked in: compiled with this CVBridge, so the interface cannot differ.
        m.table = m.linked(CVB_MODULE_ABI);
        if (!m.table) m.failure = std::string(m.entry) + " refused this build's interface version";
        return;
    }
    std::string folder = own_folder();
    if (folder.empty()) {
        m.failure = std::string("cannot load ") + m.file + " (" + m.holds +
                    "): the folder of the running program is unknown (is /proc mounted?)";
        return;
    }
    const std::string parent = folder.substr(0, folder.rfind('/'));
    const std::string candidates[] = {folder + "/" + m.file, parent + "/lib/cvcam/" + m.file};
    for (const std::string &path : candidates) {
        // The first that exists is the one: a broken module is reported, not skipped.
        if (access(path.c_str(), F_OK) != 0) continue;
        // RTLD_NOW: an unresolved symbol fails here, with dlerror's text, not at some later call.
        void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char *why = dlerror();
            m.failure = std::string("cannot load ") + path + " (" + m.holds + "): " + (why ? why : "dlopen failed");
            return;
        }
        // Never dlclose'd, even when unusable: unloading OpenCV's libraries is not safe.
        void *entry = dlsym(handle, m.entry);
        m.table = entry ? reinterpret_cast<const Table *(*)(int)>(entry)(CVB_MODULE_ABI) : nullptr;
        if (!m.table)
            m.failure = path + " is not the module this program was built with (" +
                        (entry ? "another interface version" : std::string("it has no ") + m.entry) +
                        "): install the program and its modules from one build";
        return;
    }
    m.failure = std::string(m.file) + " (" + m.holds + ") is missing: looked for " + candidates[0] + " and " +
                candidates[1];
}

template <typename Table> const Table *get(Module<Table> &m, cvb_error *err) {
    std::call_once(m.once, [&] { load(m); });
    if (!m.table) cvb::set_error(err, CVB_ERROR_MODULE_UNAVAILABLE, m.failure.c_str());
    return m.table;
}

// FFmpeg's level as last set by cvb_set_library_log_level (-1: never), and the video module
// once loaded; one lock, so a level set while the module loads is applied exactly once, last.
std::mutex ffmpeg_mutex;
int ffmpeg_level = -1;
const cvb_video_table *loaded_video = nullptr;

} // namespace

namespace cvb {

const cvb_video_table *video_module(cvb_error *err) {
    std::call_once(video.once, [&] {
        load(video);
        if (!video.table) return;
        std::lock_guard<std::mutex> lock(ffmpeg_mutex);
        loaded_video = video.table;
        if (ffmpeg_level >= 0) loaded_video->set_ffmpeg_log_level(ffmpeg_level);
    });
    if (!video.table) set_error(err, CVB_ERROR_MODULE_UNAVAILABLE, video.failure.c_str());
    return video.table;
}

void set_ffmpeg_log_level(int level) {
    std::lock_guard<std::mutex> lock(ffmpeg_mutex);
    ffmpeg_level = level;
    if (loaded_video) loaded_video->set_ffmpeg_log_level(level);
}

const cvb_objdetect_table *objdetect_module(cvb_error *err) { return get(objdetect, err); }

const cvb_imgcodecs_table *imgcodecs_module(cvb_error *err) { return get(imgcodecs, err); }

} // namespace cvb

extern "C" int cvb_module_load(cvb_module module, cvb_error *err) {
    switch (module) {
    case CVB_MODULE_VIDEO: return cvb::video_module(err) ? 0 : -1;
    case CVB_MODULE_OBJDETECT: return cvb::objdetect_module(err) ? 0 : -1;
    case CVB_MODULE_IMGCODECS: return cvb::imgcodecs_module(err) ? 0 : -1;
    }
    cvb::set_error(err, -1, "no such module");
    return -1;
}
