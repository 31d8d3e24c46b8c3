/* The optional accelerator of harness.events.json.encode_lossless (issue 17).
 *
 * plain_json(value) -> bool: True only when every value reachable from `value` is of an
 * exact JSON type, checked in one C walk: None, bool, int within +-(2^53-1), a finite
 * float that is not -0.0, str, list, and dict whose keys are all str; nested at most
 * 512 containers deep. Anything else (a subclass, a tuple, a frozen container, an enum,
 * a deeper or cyclic value) gives False, and the caller takes the pure-Python path, which
 * decides as before. Only exact types are looked at, so no Python code runs during the
 * walk and the containers cannot change under it; every reference is borrowed.
 *
 * Built only on request (`make accel`); harness works and is tested without it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#define MAX_DEPTH 512
#define MAX_SAFE_INTEGER 9007199254740991LL

static int plain(PyObject *value, int depth);

static int
plain_scalar(PyObject *value)
{
    PyTypeObject *kind = Py_TYPE(value);
    if (kind == &PyUnicode_Type || value == Py_None || kind == &PyBool_Type) {
        return 1;
    }
    if (kind == &PyLong_Type) {
        int overflow = 0;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow != 0) {
            return 0;
        }
        if (number == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        return number >= -MAX_SAFE_INTEGER && number <= MAX_SAFE_INTEGER;
    }
    if (kind == &PyFloat_Type) {
        double number = PyFloat_AS_DOUBLE(value);
        if (!isfinite(number)) {
            return 0;
        }
        return number != 0.0 || !signbit(number);
    }
    return 0;
}

static int
plain(PyObject *value, int depth)
{
    PyTypeObject *kind = Py_TYPE(value);
    if (kind == &PyDict_Type) {
        if (depth >= MAX_DEPTH) {
            return 0;
        }
        Py_ssize_t position = 0;
        PyObject *key, *item;
        while (PyDict_Next(value, &position, &key, &item)) {
            if (Py_TYPE(key) != &PyUnicode_Type) {
                return 0;
            }
            if (!plain(item, depth + 1)) {
                return 0;
            }
        }
        return 1;
    }
    if (kind == &PyList_Type) {
        if (depth >= MAX_DEPTH) {
            return 0;
        }
        /* The size is read on each step: exact lists run no Python code here, but be exact. */
        for (Py_ssize_t index = 0; index < PyList_GET_SIZE(value); index++) {
            if (!plain(PyList_GET_ITEM(value, index), depth + 1)) {
                return 0;
            }
        }
        return 1;
    }
    return plain_scalar(value);
}

static PyObject *
plain_json(PyObject *module, PyObject *value)
{
    (void)module;
    if (plain(value, 0)) {
        Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

static PyMethodDef methods[] = {
    {"plain_json", plain_json, METH_O,
     "True when every value reachable is of an exact JSON type (see the module source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "harness.events._typewalk",
    "The optional C walk behind encode_lossless.", -1, methods,
};

PyMODINIT_FUNC
PyInit__typewalk(void)
{
    return PyModule_Create(&module);
}
