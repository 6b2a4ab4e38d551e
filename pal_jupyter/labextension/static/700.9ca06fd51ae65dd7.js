"use strict";(self.rspackChunkpal_jupyter_labextension=self.rspackChunkpal_jupyter_labextension||[]).push([[700],{646(e,t,r){var n=r(601),o=r.n(n),a=r(314),i=(r.n(a))()(o());i.push([e.id,`/*
 * pal-jupyter's help bar: a row of small buttons under a failed cell's output ("Explain this
 * error", "Hint"). Only JupyterLab's theme variables, so it follows light and dark themes;
 * indented like the output area so it reads as part of the cell.
 */
.pal-help {
  display: flex;
  flex-wrap: wrap;
  gap: 6px;
  align-items: center;
  padding: 4px 0 6px
    calc(var(--jp-cell-collapser-width, 8px) + var(--jp-cell-prompt-width, 64px));
  font-family: var(--jp-ui-font-family);
  font-size: var(--jp-ui-font-size1);
}

.pal-help-action {
  padding: 2px 10px;
  border: var(--jp-border-width, 1px) solid var(--jp-border-color1);
  border-radius: var(--jp-border-radius, 2px);
  background: var(--jp-layout-color1);
  color: var(--jp-ui-font-color1);
  font: inherit;
  line-height: 1.6;
  cursor: pointer;
}

.pal-help-action:hover {
  background: var(--jp-layout-color2);
  border-color: var(--jp-brand-color1);
}

.pal-help-action:focus-visible {
  outline: 1px solid var(--jp-brand-color1);
  outline-offset: 1px;
}
`,""]),r.d(t,{},{A:i})},314(e){e.exports=function(e){var t=[];return t.toString=function(){return this.map(function(t){var r="",n=void 0!==t[5];return t[4]&&(r+="@supports (".concat(t[4],") {")),t[2]&&(r+="@media ".concat(t[2]," {")),n&&(r+="@layer".concat(t[5].length>0?" ".concat(t[5]):""," {")),r+=e(t),n&&(r+="}"),t[2]&&(r+="}"),t[4]&&(r+="}"),r}).join("")},t.i=function(e,r,n,o,a){"string"==typeof e&&(e=[[null,e,void 0]]);var i={};if(n)for(var s=0;s<this.length;s++){var c=this[s][0];null!=c&&(i[c]=!0)}for(var l=0;l<e.length;l++){var p=[].concat(e[l]);n&&i[p[0]]||(void 0!==a&&(void 0===p[5]||(p[1]="@layer".concat(p[5].length>0?" ".concat(p[5]):""," {").concat(p[1],"}")),p[5]=a),r&&(p[2]&&(p[1]="@media ".concat(p[2]," {").concat(p[1],"}")),p[2]=r),o&&(p[4]?(p[1]="@supports (".concat(p[4],") {").concat(p[1],"}"),p[4]=o):p[4]="".concat(o)),t.push(p))}},t}},601(e){e.exports=function(e){return e[1]}},72(e){var t=[];function r(e){for(var r=-1,n=0;n<t.length;n++)if(t[n].identifier===e){r=n;break}return r}function n(e,n){for(var o={},a=[],i=0;i<e.length;i++){var s=e[i],c=n.base?s[0]+n.base:s[0],l=o[c]||0,p="".concat(c," ").concat(l);o[c]=l+1;var u=r(p),d={css:s[1],media:s[2],sourceMap:s[3],supports:s[4],layer:s[5]};if(-1!==u)t[u].references++,t[u].updater(d);else{var f=function(e,t){var r=t.domAPI(t);return r.update(e),function(t){t?(t.css!==e.css||t.media!==e.media||t.sourceMap!==e.sourceMap||t.supports!==e.supports||t.layer!==e.layer)&&r.update(e=t):r.remove()}}(d,n);n.byIndex=i,t.splice(i,0,{identifier:p,updater:f,references:1})}a.push(p)}return a}e.exports=function(e,o){var a=n(e=e||[],o=o||{});return function(e){e=e||[];for(var i=0;i<a.length;i++){var s=r(a[i]);t[s].references--}for(var c=n(e,o),l=0;l<a.length;l++){var p=r(a[l]);0===t[p].references&&(t[p].updater(),t.splice(p,1))}a=c}}},659(e){var t={};e.exports=function(e,r){var n=function(e){if(void 0===t[e]){var r=document.querySelector(e);if(window.HTMLIFrameElement&&r instanceof window.HTMLIFrameElement)try{r=r.contentDocument.head}catch(e){r=null}t[e]=r}return t[e]}(e);if(!n)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");n.appendChild(r)}},540(e){e.exports=function(e){var t=document.createElement("style");return e.setAttributes(t,e.attributes),e.insert(t,e.options),t}},56(e,t,r){e.exports=function(e){var t=r.nc;t&&e.setAttribute("nonce",t)}},206(e){e.exports=function(e){if("u"<typeof document)return{update:function(){},remove:function(){}};var t=e.insertStyleElement(e);return{update:function(r){var n,o,a;n="",r.supports&&(n+="@supports (".concat(r.supports,") {")),r.media&&(n+="@media ".concat(r.media," {")),(o=void 0!==r.layer)&&(n+="@layer".concat(r.layer.length>0?" ".concat(r.layer):""," {")),n+=r.css,o&&(n+="}"),r.media&&(n+="}"),r.supports&&(n+="}"),(a=r.sourceMap)&&"u">typeof btoa&&(n+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(a))))," */")),e.styleTagTransform(n,t,e.options)},remove:function(){var e;null===(e=t).parentNode||e.parentNode.removeChild(e)}}}},113(e){e.exports=function(e,t){if(t.styleSheet)t.styleSheet.cssText=e;else{for(;t.firstChild;)t.removeChild(t.firstChild);t.appendChild(document.createTextNode(e))}}},959(e,t,r){var n=r(72),o=r.n(n),a=r(206),i=r.n(a),s=r(659),c=r.n(s),l=r(56),p=r.n(l),u=r(540),d=r.n(u),f=r(113),v=r.n(f),h=r(646),m={};m.styleTagTransform=v(),m.setAttributes=p(),m.insert=c().bind(null,"head"),m.domAPI=i(),m.insertStyleElement=d(),o()(h.A,m),h.A&&h.A.locals&&h.A.locals}}]);