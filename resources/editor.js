// Editor helpers every state store node uses, served by Node-RED (>= 1.3) from the package's
// resources/ folder and loaded by ss-config.html. They are looked up lazily (at edit or validation
// time), so the order in which Node-RED loads the node sets does not matter.
window.AioStateStore =
  window.AioStateStore ||
  (function () {
    var NS = 'node-red-contrib-aio-statestore/ss-config:common.'
    var KEY_TYPES = ['str', 'msg', 'flow', 'global', 'env', 'jsonata']
    var ENV = /^\$\{[^}]+\}$/
    function t(key) {
      return RED._(NS + key)
    }
    function ellipsis(text, max) {
      return text.length > max ? text.slice(0, max - 1) + '…' : text
    }
    return {
      t: t,
      KEY_TYPES: KEY_TYPES,
      TOKEN_TYPES: [
        { value: 'none', label: t('label.none'), hasValue: false },
        'msg',
        'flow',
        'global',
        'str',
        'env',
        'jsonata',
      ],
      VALUE_TYPES: ['msg', 'flow', 'global', 'str', 'num', 'bool', 'json', 'bin', 'env', 'jsonata'],
      /** How a key shows in a node label: the literal, msg.x, flow.x, ${X} or (JSONata) "expression". */
      keyLabel: function (value, type) {
        if (type === 'str') return ellipsis(String(value || ''), 24)
        if (type === 'env') return '${' + value + '}'
        if (type === 'jsonata') return t('label.expression')
        return type + '.' + value
      },
      /** A typedInput that must not be empty (any type) and must be valid for its type. */
      requiredTyped: function (typeField) {
        return function (v, opt) {
          if (v === undefined || v === null || String(v).trim() === '') {
            return opt ? RED._('node-red:validator.errors.invalid-prop') : false
          }
          return RED.validators.typedInput(typeField).call(this, v, opt)
        }
      },
      /** Blank (use the default), a whole number >= 0, or ${ENV}. */
      wholeNumber: function (v, opt) {
        var s = String(v === undefined || v === null ? '' : v).trim()
        if (s === '' || /^\d+$/.test(s) || ENV.test(s)) return true
        return opt ? RED._('node-red-contrib-aio-statestore/ss-config:ss-config.validation.number') : false
      },
      brokerUrl: function (v, opt) {
        var s = String(v || '').trim()
        // Blank connects where the runtime says: $AIO_STATESTORE_URL, else mqtt://127.0.0.1:1883.
        if (s === '' || /^(mqtts?|wss?):\/\/[^\s]+$/.test(s) || ENV.test(s)) return true
        return opt ? RED._('node-red-contrib-aio-statestore/ss-config:ss-config.validation.broker') : false
      },
      /**
       * In oneditprepare: a setting left blank runs with its default (a node saved before the setting existed, or
       * written by hand), so its field shows that value, and a text field cleared says it is the default.
       */
      showDefaults: function (node, names) {
        var defaults = node._def.defaults
        names.forEach(function (name) {
          var field = $('#node-input-' + name)
          var value = defaults[name].value
          if (!field.is('select')) field.attr('placeholder', RED._(NS + 'label.defaultValue', { value: value }))
          if (field.val() === '' || field.val() === null) field.val(value)
        })
      },
      /** Sets up the key typedInput of a palette node's dialog. */
      keyInput: function () {
        $('#node-input-key').typedInput({ default: 'msg', types: KEY_TYPES, typeField: '#node-input-keyType' })
      },
      decodeOptions: function (select) {
        ;['auto', 'utf8', 'buffer', 'json', 'ndjson'].forEach(function (d) {
          $('<option>')
            .val(d)
            .text(t('decode.' + d))
            .appendTo(select)
        })
      },
      /**
       * The state store a node uses when it has none yet: the first config node its flow can see, so
       * a node dropped from the palette is ready to deploy when one state store exists.
       */
      pickStore: function (node) {
        if (node.store) return node.store
        var found = ''
        RED.nodes.eachConfig(function (c) {
          if (!found && c.type === 'ss-config' && !c.d && (!c.z || c.z === node.z)) found = c.id
        })
        return found
      },
      /** onadd: a node dropped from the palette takes the state store at once (no red border, no Deploy warning). */
      onadd: function () {
        this.store = window.AioStateStore.pickStore(this)
      },
      /** In oneditprepare: a node still without a state store (imported, or added before one existed) gets one offered. */
      selectStore: function (node) {
        var id = window.AioStateStore.pickStore(node)
        if (id && !node.store) $('#node-input-store').val(id).trigger('change')
      },
      /**
       * The palette filter matches a node's type and its palette label only (Node-RED 4 and 5 keep the
       * label in data-palette-label). The short labels stay; the words people search for ("state",
       * "statestore", "aio") are added to what the filter reads.
       */
      paletteSearchWords: function (type) {
        var words = ' ' + t('search')
        $('.red-ui-palette-node[data-palette-type="' + type + '"]').attr('data-palette-label', function (i, label) {
          label = label || ''
          return label.slice(-words.length) === words ? label : label + words
        })
      },
    }
  })()
// Whichever of this file and a palette node's file the editor loads first, the words get added once.
;['ss-get', 'ss-set', 'ss-del', 'ss-lock', 'ss-update', 'ss-watch'].forEach(window.AioStateStore.paletteSearchWords)
